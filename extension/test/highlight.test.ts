import { python } from '@codemirror/lang-python';
import { StreamLanguage, StreamParser, ensureSyntaxTree } from '@codemirror/language';
import { EditorState, Extension } from '@codemirror/state';
import { classHighlighter, highlightTree } from '@lezer/highlight';
import { readFileSync, readdirSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';
import { isTlxCell, llvmParser, mlirParser, ptxParser, sassParser, tokenize } from '../src/highlight';
import { languageExtension } from '../src/languages';

/** Highlight `text` the way the viewer does: an EditorState with the language, the parsed tree,
 * highlightTree over it. Returns [text, classes] of every highlighted span. */
function highlight(lang: Extension, text: string): Array<[string, string]> {
  const state = EditorState.create({ doc: text, extensions: [lang] });
  const tree = ensureSyntaxTree(state, state.doc.length, 10_000);
  if (!tree) {
    throw new Error('no syntax tree');
  }
  const out: Array<[string, string]> = [];
  highlightTree(tree, classHighlighter, (from, to, cls) => out.push([text.slice(from, to), cls]));
  return out;
}

function viaCodeMirror(parser: StreamParser<unknown>, text: string): Array<[string, string]> {
  return highlight(StreamLanguage.define(parser), text);
}

function types(parser: any, line: string): Array<[string, string | null]> {
  return tokenize(parser, line)[0]
    .filter(t => t.text.trim())
    .map(t => [t.text, t.type] as [string, string | null]);
}

function typeOf(parser: any, line: string, text: string): string | null | undefined {
  return types(parser, line).find(([t]) => t === text)?.[1];
}

describe('MLIR', () => {
  const line =
    '    %12 = tt.dot %a, %b, %acc : tensor<128x64xf16, #ttg.dot_op<{opIdx = 0, parent = #mma}>> -> tensor<128x128xf32, #mma> loc(#loc7) // acc';
  it('tokenizes an op line', () => {
    expect(typeOf(mlirParser, line, '%12')).toBe('variableName');
    expect(typeOf(mlirParser, line, 'tt.dot')).toBe('keyword');
    expect(typeOf(mlirParser, line, 'tensor')).toBe('typeName');
    expect(typeOf(mlirParser, line, '#mma')).toBe('meta');
    expect(typeOf(mlirParser, line, '#ttg.dot_op')).toBe('meta');
    expect(typeOf(mlirParser, line, 'opIdx')).toBe('propertyName');
    expect(typeOf(mlirParser, line, '// acc')).toBe('comment');
  });
  it('handles headers, strings and blocks', () => {
    expect(typeOf(mlirParser, 'tt.func public @matmul_kernel(%arg0: !tt.ptr<f16>) {', '@matmul_kernel')).toBe(
      'variableName.definition'
    );
    expect(typeOf(mlirParser, '#loc = loc("/tmp/x.py":12:3)', '"/tmp/x.py"')).toBe('string');
    expect(typeOf(mlirParser, '^bb1(%x: i32):', '^bb1')).toBe('labelName');
    expect(typeOf(mlirParser, '^bb1(%x: i32):', 'i32')).toBe('typeName');
  });
});

describe('LLVM IR', () => {
  it('tokenizes', () => {
    const l = '  %5 = call float @llvm.nvvm.fma.rn.f(float %3, float 2.0), !dbg !12 ; fma';
    expect(typeOf(llvmParser, l, '%5')).toBe('variableName');
    expect(typeOf(llvmParser, l, 'call')).toBe('keyword');
    expect(typeOf(llvmParser, l, 'float')).toBe('typeName');
    expect(typeOf(llvmParser, l, '@llvm.nvvm.fma.rn.f')).toBe('variableName.definition');
    expect(typeOf(llvmParser, l, '!dbg')).toBe('meta');
    expect(typeOf(llvmParser, l, '; fma')).toBe('comment');
    expect(typeOf(llvmParser, 'entry:', 'entry:')).toBe('labelName');
  });
});

describe('PTX', () => {
  it('tokenizes instructions, directives, guards and comments', () => {
    expect(typeOf(ptxParser, '\tld.global.v4.b32 { %r1, %r2 }, [ %rd3 + 0 ];', 'ld.global.v4.b32')).toBe('keyword');
    expect(typeOf(ptxParser, '\tld.global.v4.b32 { %r1, %r2 }, [ %rd3 + 0 ];', '%rd3')).toBe('variableName');
    expect(typeOf(ptxParser, '\t.loc\t1 12 25', '.loc')).toBe('meta');
    expect(typeOf(ptxParser, '\t@%p1 bra $L__BB0_2;', '@%p1')).toBe('atom');
    expect(typeOf(ptxParser, '\t@%p1 bra $L__BB0_2;', 'bra')).toBe('keyword');
    expect(typeOf(ptxParser, '$L__BB0_2:', '$L__BB0_2:')).toBe('labelName');
    expect(typeOf(ptxParser, '\tmov.f32 %f1, 0f3F800000; // one', '0f3F800000')).toBe('number');
    expect(typeOf(ptxParser, '\tmov.f32 %f1, 0f3F800000; // one', '// one')).toBe('comment');
  });
  it('spans block comments over lines', () => {
    const toks = tokenize(ptxParser, '/* a\n b */ mov.u32 %r1, 1;');
    expect(toks[0][0].type).toBe('comment');
    expect(toks[1][0].type).toBe('comment');
    expect(toks[1].find(t => t.text === 'mov.u32')?.type).toBe('keyword');
  });
});

describe('SASS', () => {
  it('tokenizes an nvdisasm line', () => {
    const l = '        /*0090*/                   HMMA.16816.F32 R4, R8, R12, R4 ;   /* 0x0000000c0804723c */';
    expect(typeOf(sassParser, l, '/*0090*/')).toBe('comment');
    expect(typeOf(sassParser, l, 'HMMA.16816.F32')).toBe('keyword');
    expect(typeOf(sassParser, l, 'R4')).toBe('variableName');
    expect(typeOf(sassParser, l, '/* 0x0000000c0804723c */')).toBe('comment');
  });
  it('predicates, constants, uniform registers, labels', () => {
    const l = '/*00a0*/ @!P0 LDG.E.128 R4, desc[UR4][R2.64+0x10] ; // load';
    expect(typeOf(sassParser, l, '@!P0')).toBe('atom');
    expect(typeOf(sassParser, l, 'LDG.E.128')).toBe('keyword');
    expect(typeOf(sassParser, l, 'UR4')).toBe('variableName');
    expect(typeOf(sassParser, l, '0x10')).toBe('number');
    expect(typeOf(sassParser, '/*0010*/ MOV R1, c[0x0][0x28] ;', 'c[0x0]')).toBe('atom');
    expect(typeOf(sassParser, '.L_x_1:', '.L_x_1:')).toBe('labelName');
  });
});

describe('through CodeMirror itself (StreamLanguage calls token without `this`)', () => {
  it('PTX block comments', () => {
    const spans = viaCodeMirror(ptxParser as StreamParser<unknown>, '/* a\n b */ mov.u32 %r1, 1;\n/* c */');
    expect(spans.filter(([, c]) => c.includes('tok-comment')).length).toBeGreaterThanOrEqual(2);
    expect(spans.find(([t]) => t === 'mov.u32')?.[1]).toContain('tok-keyword');
  });
  it('every IR parser over a few lines', () => {
    const samples: Array<[StreamParser<unknown>, string]> = [
      [mlirParser as StreamParser<unknown>, '%0 = tt.load %a : tensor<64xf16, #blocked> loc(#loc1) // x\n"str"'],
      [llvmParser as StreamParser<unknown>, 'define void @f(ptr %0) {\nentry:\n  ret void ; done\n}'],
      [ptxParser as StreamParser<unknown>, '.version 8.4\n\t@%p1 bra $L__BB0_2;\n/* x */ ret;'],
      [sassParser as StreamParser<unknown>, '/*0000*/ MOV R1, c[0x0][0x28] ; /* 0x0 */\n.L_x_1:']
    ];
    for (const [p, text] of samples) {
      expect(viaCodeMirror(p, text).length).toBeGreaterThan(2);
    }
    // token names are tags CodeMirror knows (an unknown name would be left unstyled)
    const def = viaCodeMirror(llvmParser as StreamParser<unknown>, 'define void @f() {').find(([t]) => t === '@f');
    expect(def?.[1]).toContain('tok-definition');
  });
});

describe('Python: the source pane uses JupyterLab\'s Python (@codemirror/lang-python)', () => {
  it('has no stream parser of its own', async () => {
    // outside JupyterLab (no registry) Python is plain text; in JupyterLab the registry's Python
    expect(await languageExtension('python')).toBeNull();
    expect(await languageExtension('ptx')).not.toBeNull();
  });
  it('highlights triple-quoted docstrings (the crash of issue 17)', () => {
    const cell = '%%tlx --bench\n@triton.jit\ndef k(x_ptr):\n    """One line."""\n    s = \'\'\'a\nb\'\'\'\n    return tl.dot(a, b)\n';
    const spans = highlight(python(), cell);
    expect(spans.find(([t]) => t === '"""One line."""')?.[1]).toContain('tok-string');
    expect(spans.find(([t]) => t === 'def')?.[1]).toContain('tok-keyword');
  });
  const dir = join(__dirname, '..', '..', 'kernels', 'tlx_kernels', 'gemm');
  const files = readdirSync(dir).filter(f => f.endsWith('.py'));
  for (const f of files) {
    it(`highlights the library module ${f}`, () => {
      const text = readFileSync(join(dir, f), 'utf8');
      const spans = highlight(python(), text);
      expect(spans.some(([, c]) => c.includes('tok-keyword'))).toBe(true);
      if (text.includes('"""')) {
        expect(spans.some(([t, c]) => t.startsWith('"""') && c.includes('tok-string'))).toBe(true);
      }
    });
  }
});

describe('isTlxCell', () => {
  it('recognizes the cell magic', () => {
    expect(isTlxCell('%%tlx\n@triton.jit')).toBe(true);
    expect(isTlxCell('\n  %%tlx --bench\n')).toBe(true);
    expect(isTlxCell('%%tlxx\n')).toBe(false);
    expect(isTlxCell('x = 1\n%%tlx')).toBe(false);
    expect(isTlxCell('%%timeit\n')).toBe(false);
  });
});

describe('every stage of the recorded examples highlights through CodeMirror', () => {
  const dir = join(__dirname, '..', '..', 'workbench', 'report', 'examples');
  const files = readdirSync(dir).filter(f => f.endsWith('.json'));
  for (const f of files) {
    it(f, async () => {
      const { loadReport } = await import('../src/types');
      const r = await loadReport(JSON.parse(readFileSync(join(dir, f), 'utf8')));
      for (const s of r.stages) {
        const ext = await languageExtension(s.language);
        expect(ext, s.name).not.toBeNull();
        const spans = highlight(ext!, s.text);
        expect(spans.length, s.name).toBeGreaterThan(s.lineCount / 4);
      }
      expect(highlight(python(), r.source).length).toBeGreaterThan(0);
    });
  }
});
