import { describe, expect, it } from 'vitest';
import {
  isTlxCell,
  llvmParser,
  mlirParser,
  ptxParser,
  pythonParser,
  sassParser,
  tokenize
} from '../src/highlight';

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
      'definition(variableName)'
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
    expect(typeOf(llvmParser, l, '@llvm.nvvm.fma.rn.f')).toBe('definition(variableName)');
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

describe('Python (source pane)', () => {
  it('marks the magic, decorators, keywords and strings', () => {
    const toks = tokenize(pythonParser, '%%tlx --target sm_90\n@triton.jit\ndef k(x):  # c\n    s = """a\nb"""\n    return tl.dot(a, b)');
    expect(toks[0][0]).toEqual({ text: '%%tlx --target sm_90', type: 'meta' });
    expect(toks[1][0].type).toBe('meta');
    expect(toks[2].find(t => t.text === 'def')?.type).toBe('keyword');
    expect(toks[2].find(t => t.text === '# c')?.type).toBe('comment');
    expect(toks[3].find(t => t.text.startsWith('"""'))?.type).toBe('string');
    expect(toks[4][0].type).toBe('string');
    expect(toks[5].find(t => t.text === 'dot')?.type).toBe('variableName');
  });
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
