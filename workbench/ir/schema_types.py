"""The Report's payloads as TypedDicts, generated from workbench/report/schema.json by
extension/scripts/schema_types.py (datamodel-code-generator): do not edit. tests/report/test_schema_types.py
fails when it drifts."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict


class Versions(TypedDict):
    workbench: str
    triton: str
    torch: NotRequired[str | None]
    python: NotRequired[str]


class View(TypedDict):
    stages_first: list[str]
    selected_stage: NotRequired[str | None]


class LostItem(TypedDict):
    task: int
    line: int | None
    why: str


class Simulation(TypedDict):
    finished: NotRequired[list[int]]
    lost: NotRequired[list[LostItem]]
    truncated: NotRequired[bool]
    steps: NotRequired[int]
    seconds: NotRequired[float]
    values: NotRequired[dict[str, int]]
    grid: NotRequired[list[int] | None]


class Measured(TypedDict):
    measured_by: NotRequired[str | None]
    device: NotRequired[str | None]
    when: NotRequired[str | None]
    ctas_recorded: NotRequired[int | None]
    level: NotRequired[str | None]


class State(TypedDict):
    buffer: int
    states: list[str]


class OrchestrationStep(TypedDict):
    round: int
    buffer: int
    slots: list[int]
    state: Literal['filling', 'full', 'released']
    task: int | None
    line: int | None
    states: list[State]


class OrchestrationTask(TypedDict):
    index: int
    name: str
    partition: NotRequired[int | None]
    replica: NotRequired[int | None]
    num_warps: int
    start_warp: NotRequired[int | None]
    registers: NotRequired[int | None]
    line: NotRequired[int | None]
    region: NotRequired[str]
    role: NotRequired[str | None]
    ops: list[int]


class OrchestrationBuffer(TypedDict):
    id: int
    name: str
    line: NotRequired[int | None]
    shape: NotRequired[list[int]]
    dtype: NotRequired[str]
    count: int
    storage: NotRequired[str]
    bytes: NotRequired[int]
    filled_by: NotRequired[int | None]
    released_by: NotRequired[int | None]
    slot_barriers: NotRequired[list[int | None] | None]
    unpaired: NotRequired[str | None]


class OrchestrationBarrier(TypedDict):
    id: int
    name: str
    line: NotRequired[int | None]
    count: int
    arrive_count: int
    named: NotRequired[int | None]


class OrchestrationOp(TypedDict):
    id: int
    task: int
    kind: str
    line: int | None
    barrier: NotRequired[int | None]
    buffers: NotRequired[list[int]]
    bytes: NotRequired[int | None]
    count: NotRequired[int | None]
    in_loop: NotRequired[bool]
    repeats: NotRequired[int]


class OrchestrationWaitTime(TypedDict):
    role: str | None
    count: int
    mean_ns: NotRequired[float | None]
    p95_ns: NotRequired[float | None]
    total_ns: NotRequired[float | None]
    fraction: NotRequired[float | None]
    per_cta: NotRequired[float | None]
    shared: NotRequired[int]


class OrchestrationWait(TypedDict):
    op: int
    task: NotRequired[int]
    line: NotRequired[int | None]
    barrier: NotRequired[int | None]
    index: NotRequired[int | None]
    parity: NotRequired[int | None]
    named: NotRequired[int | None]
    round: NotRequired[int]
    passed: NotRequired[bool]


class Arrival(TypedDict):
    task: int
    line: int | None
    count: int


class Barrier(TypedDict):
    barrier: int
    index: int
    completed: bool
    arrivals: NotRequired[list[Arrival]]
    expected: NotRequired[int]
    copied: NotRequired[int]
    pending: NotRequired[int]


class Slot(TypedDict):
    buffer: int
    index: int
    state: Literal['empty', 'filling', 'full', 'released']


class OrchestrationRound(TypedDict):
    round: int
    barriers: list[Barrier]
    slots: list[Slot]
    waits: list[OrchestrationWait]


class OrchestrationMark(TypedDict):
    source: NotRequired[Literal['finding', 'snapshot', 'stress']]
    finding: int | None
    rule: str
    severity: NotRequired[Literal['error', 'warning', 'info']]
    color: Literal['red', 'orange', 'other', 'live', 'delay']
    line: NotRequired[int | None]
    message: NotRequired[str]
    ops: list[int]
    edges: list[int]


class SearchRow(TypedDict):
    index: int
    config: dict[str, Any]
    status: Literal['ok', 'compiled', 'skipped', 'compile-error', 'check-failed', 'hang', 'fault', 'lost', 'pending']
    ms: NotRequired[float | None]
    tflops: NotRequired[float | None]
    tbs: NotRequired[float | None]
    ratio: NotRequired[float | None]
    registers: NotRequired[int | None]
    spills: NotRequired[int | None]
    shared_kib: NotRequired[float | None]
    compile_s: NotRequired[float | None]
    cache_hit: NotRequired[bool | None]
    findings: NotRequired[str | None]
    error: NotRequired[str | None]
    node: NotRequired[str | None]
    confirmed: NotRequired[bool | None]
    cached: NotRequired[str | None]


class Source(TypedDict):
    filename: str
    first_line: int
    last_line: NotRequired[int | None]
    text: str
    kernel_text: str
    in_cell: bool


class Kernel(TypedDict):
    name: str
    kind: Literal['triton', 'gluon', 'tlx', 'other']
    target: str
    key: str
    cache_hit: bool
    compile_ms: NotRequired[float | None]
    launches: int
    source: Source


class Cell(TypedDict):
    source: str
    filename: str
    kernel_first_line: int | None
    magic_line: NotRequired[str]
    cell_id: NotRequired[str | None]
    execution_count: NotRequired[int | None]


class Stage(TypedDict):
    name: str
    language: Literal['python', 'mlir', 'llvm', 'ptx', 'sass', 'text']
    line_count: int
    full_line_count: NotRequired[int]
    text: NotRequired[str]
    text_gz: NotRequired[str]
    line_map: NotRequired[dict[str, list[int]]]
    line_map_gz: NotRequired[str]


class Task(TypedDict):
    partition: int | None
    num_warps: int
    registers: int | None
    requested_registers: NotRequired[int | None]
    start_warp: NotRequired[int | None]
    first_line: NotRequired[int | None]


class Metadata(TypedDict):
    name: NotRequired[str]
    target: NotRequired[str]
    triton_version: NotRequired[str]
    num_warps: NotRequired[int | None]
    num_stages: NotRequired[int | None]
    num_ctas: NotRequired[int | None]
    shared_bytes: NotRequired[int | None]
    registers: NotRequired[int | None]
    spill_stores: NotRequired[int | None]
    spill_loads: NotRequired[int | None]
    spills: NotRequired[int | None]
    local_bytes: NotRequired[int | None]
    max_threads: NotRequired[int | None]
    tasks: NotRequired[list[Task]]
    extra: NotRequired[dict[str, Any]]


class LayoutUse(TypedDict):
    value: NotRequired[str]
    ttgir_line: NotRequired[int]
    user_line: NotRequired[int | None]
    type: NotRequired[str]
    shape: NotRequired[list[int]]
    dtype: NotRequired[str]


class DeclaredLayout(TypedDict):
    alias: str
    kind: str
    attr: str
    params: NotRequired[dict[str, Any]]
    shared: NotRequired[bool]
    uses: NotRequired[list[LayoutUse]]


class ValueLayout(TypedDict):
    name: str
    line: NotRequired[int | None]
    shape: NotRequired[list[int]]
    dtype: NotRequired[str]
    layout: str
    ttgir: NotRequired[str]
    reason: NotRequired[str]
    kind: NotRequired[str]


Bases: TypeAlias = list[list[int]]


class LinearLayout(TypedDict):
    alias: str
    value_shape: list[int]
    dtype: str
    shape: NotRequired[list[int]]
    register: NotRequired[Bases]
    lane: NotRequired[Bases]
    warp: NotRequired[Bases]
    block: NotRequired[Bases]
    offset: NotRequired[Bases]
    element_bits: NotRequired[int]
    reason: NotRequired[str]


class Argument(TypedDict):
    name: str
    kind: Literal['tensor', 'int', 'float', 'bool', 'none', 'constexpr', 'descriptor', 'tuple', 'other']
    dtype: NotRequired[str | None]
    shape: NotRequired[list[int] | None]
    strides: NotRequired[list[int] | None]
    device: NotRequired[str | None]
    value: NotRequired[Any]


class Wait(TypedDict):
    role: str
    task: NotRequired[int | None]
    warps: list[int]
    ctas: int
    site: NotRequired[int]
    kind: Literal['wait', 'named-barrier']
    line: int | None
    barrier: int
    phase: int


class Snapshot(TypedDict):
    when_s: NotRequired[float | None]
    waits: list[Wait]


class Guard(TypedDict):
    guard: str
    message: str


class Worst(TypedDict):
    index: NotRequired[list[int]]
    actual: NotRequired[float]
    expected: NotRequired[float]


class CheckError(TypedDict):
    max_ulps: NotRequired[float | None]
    p99_ulps: NotRequired[float | None]
    norm_rel_err: NotRequired[float | None]
    working: NotRequired[str]
    reference: NotRequired[str]
    worst: NotRequired[Worst | None]


class RelatedItem(TypedDict):
    line: int | None
    message: str


class Finding(TypedDict):
    rule: str
    severity: Literal['error', 'warning', 'info']
    line: int | None
    message: str
    related: NotRequired[list[RelatedItem]]
    hint: NotRequired[str | None]


class Diagnostic(TypedDict):
    severity: Literal['error', 'warning', 'info']
    message: str
    line: int | None
    col: NotRequired[int | None]
    hint: str | None
    source: NotRequired[str | None]


class Device(TypedDict):
    available: bool
    kind: Literal['cuda', 'hip', 'none']
    name: str | None
    arch: NotRequired[str | None]
    reason: NotRequired[str | None]


Status: TypeAlias = Literal['ok', 'skipped', 'error']


class Env(TypedDict):
    measured_at: NotRequired[str | None]
    device: NotRequired[str | None]
    driver: NotRequired[str | None]
    torch: NotRequired[str | None]
    triton: NotRequired[str | None]
    python: NotRequired[str | None]
    cuda_runtime: NotRequired[str | None]


class Timing(TypedDict):
    name: str
    median_ms: float | None
    p10_ms: float | None
    p90_ms: float | None
    mean_ms: NotRequired[float | None]
    min_ms: NotRequired[float | None]
    runs: int
    calls_per_run: NotRequired[int]
    method: str
    l2: str
    spread: NotRequired[float | None]
    stable: bool
    spread_limit: NotRequired[float]
    warning: NotRequired[str | None]
    notes: NotRequired[list[str]]
    env: NotRequired[Env]
    flops: NotRequired[float | None]
    bytes: NotRequired[float | None]
    tflops: NotRequired[float | None]
    tbs: NotRequired[float | None]


class MeasureError(TypedDict):
    type: str
    message: str
    where: NotRequired[str | None]


class Bench(TypedDict):
    kind: Literal['bench']
    status: Status
    reason: str | None
    measured_by: NotRequired[str | None]
    device: NotRequired[str | None]
    when: NotRequired[str | None]
    summary: NotRequired[str]
    provenance: NotRequired[str]
    timing: NotRequired[Timing | None]
    reference: NotRequired[Timing | None]
    ratio: NotRequired[float | None]
    errors: NotRequired[list[MeasureError]]


class RooflinePoint(TypedDict):
    name: str
    kind: NotRequired[str]
    flops: NotRequired[float | None]
    bytes: NotRequired[float | None]
    seconds: NotRequired[float | None]
    intensity: float | None
    tflops: NotRequired[float | None]
    tbs: NotRequired[float | None]


class Ceilings(TypedDict):
    device: str
    source: str
    tflops: NotRequired[dict[str, float | None]]
    bandwidth_tbs: NotRequired[float | None]
    measured_at: NotRequired[str | None]
    driver: NotRequired[str | None]
    notes: NotRequired[list[str]]
    method: NotRequired[dict[str, Any]]
    env: NotRequired[dict[str, Any]]
    datasheet: NotRequired[dict[str, Any] | None]


class Counts(TypedDict):
    flops: NotRequired[float | None]
    bytes: NotRequired[float | None]
    source: NotRequired[str]
    note: NotRequired[str]
    estimate: NotRequired[bool]


class Kernel1(TypedDict):
    name: str
    kind: NotRequired[str]
    calls: NotRequired[float]
    device_us: NotRequired[float | None]
    mean_us: NotRequired[float | None]
    share: NotRequired[float | None]


class Capture(TypedDict):
    kind: Literal['capture']
    status: Status
    reason: str | None
    measured_by: NotRequired[str | None]
    device: NotRequired[str | None]
    when: NotRequired[str | None]
    summary: NotRequired[str]
    provenance: NotRequired[str]
    kernels: NotRequired[list[Kernel1]]
    device_ms: NotRequired[float | None]
    span_ms: NotRequired[float | None]
    event_ms: NotRequired[float | None]
    busy_fraction: NotRequired[float | None]
    repeat: NotRequired[int]
    env: NotRequired[Env]
    notes: NotRequired[list[str]]


StallCounts: TypeAlias = dict[str, int]


class Mapped(TypedDict):
    instruction: NotRequired[float | None]
    line: NotRequired[float | None]
    role: NotRequired[float | None]
    role_and_line: NotRequired[float | None]
    loop_samples: NotRequired[int]
    loop_role_and_line: NotRequired[float | None]


class Role(TypedDict):
    role: str
    line: NotRequired[int | None]
    warps: NotRequired[int]
    samples: int
    stalled: NotRequired[float | None]
    by_reason: StallCounts


class Line(TypedDict):
    line: int
    samples: int
    top: NotRequired[str | None]
    role: NotRequired[str | None]
    by_reason: StallCounts


class HotItem(TypedDict):
    address: int
    sass_line: int
    op: str
    samples: int
    top: NotRequired[str | None]
    line: NotRequired[int | None]
    role: NotRequired[str | None]
    loop: NotRequired[bool]
    by_reason: NotRequired[StallCounts]


class Stalls(TypedDict):
    kind: Literal['stalls']
    status: Status
    reason: str | None
    measured_by: NotRequired[str | None]
    device: NotRequired[str | None]
    when: NotRequired[str | None]
    summary: NotRequired[str]
    provenance: NotRequired[str]
    kernel: NotRequired[str]
    seconds: NotRequired[float | None]
    duration_ns: NotRequired[float | None]
    ncu_version: NotRequired[str | None]
    report_file: NotRequired[str | None]
    samples: NotRequired[int]
    reasons: NotRequired[list[str]]
    by_reason: NotRequired[StallCounts]
    mapped: NotRequired[Mapped]
    pc_offset: NotRequired[int]
    roles: NotRequired[list[Role]]
    lines: NotRequired[list[Line]]
    hot: NotRequired[list[HotItem]]


class OtherMeasurement(TypedDict):
    kind: str
    status: NotRequired[Status]
    reason: NotRequired[str | None]
    measured_by: NotRequired[str | None]
    device: NotRequired[str | None]
    when: NotRequired[str | None]
    summary: NotRequired[str]
    provenance: NotRequired[str]


class Roofs(TypedDict):
    peak_tflops: float
    bandwidth_tbs: float
    measured_peak_tflops: float | None
    measured_bandwidth_tbs: float | None


class PlacedItem(TypedDict):
    name: str
    kind: str
    x: float
    y: float
    left: bool


class RooflineView(TypedDict):
    roofs: Roofs | None
    placed: list[PlacedItem]
    timed: bool


class Category(TypedDict):
    category: str
    color: str
    label: str


class Trace(TypedDict):
    displayTimeUnit: NotRequired[str]
    traceEvents: list[dict[str, Any]]
    otherData: NotRequired[dict[str, Any]]


class TimelineView(TypedDict):
    categories: list[Category]
    trace: NotRequired[Trace | None]


class TimelineLane(TypedDict):
    cta: NotRequired[int | None]
    role: str
    category: NotRequired[str]
    name: NotRequired[str]
    start_ns: NotRequired[float]
    dur_ns: NotRequired[float]
    cycles: NotRequired[float | None]


class TimelineRole(TypedDict):
    role: str
    kind: NotRequired[str]
    warps: NotRequired[Any]
    busy_fraction: NotRequired[float | None]
    waiting_fraction: NotRequired[float | None]
    span_ns: NotRequired[float | None]
    activity_share: NotRequired[dict[str, Any]]
    iterations: NotRequired[dict[str, Any]]
    phases_ns: NotRequired[dict[str, Any]]
    notes: NotRequired[list[str]]


class Timeline(TypedDict):
    kind: Literal['timeline']
    status: Status
    reason: str | None
    measured_by: NotRequired[str | None]
    device: NotRequired[str | None]
    when: NotRequired[str | None]
    summary: NotRequired[str]
    provenance: NotRequired[str]
    kernel: NotRequired[str]
    ctas_recorded: NotRequired[int]
    ctas_total: NotRequired[int]
    clock: NotRequired[dict[str, Any]]
    roles: NotRequired[list[TimelineRole]]
    lanes: NotRequired[list[TimelineLane]]
    view: NotRequired[TimelineView]
    overlap: NotRequired[dict[str, Any] | None]
    cta_start_skew: NotRequired[dict[str, Any] | None]
    dropped: NotRequired[dict[str, Any] | None]
    timing: NotRequired[dict[str, Any] | None]
    warnings: NotRequired[list[str]]
    errors: NotRequired[list[Any]]
    env: NotRequired[Env]


class StageDiff(TypedDict):
    name: str
    status: Literal['same', 'changed', 'added', 'removed']
    added: int
    removed: int
    diff: NotRequired[str]
    diff_gz: NotRequired[str]
    truncated: NotRequired[bool]


class Metadatum(TypedDict):
    field: str
    before: Any
    after: Any


class Measurement1(TypedDict):
    kind: str
    before: NotRequired[Any]
    after: NotRequired[Any]


class Time(TypedDict):
    before_ms: NotRequired[float]
    after_ms: NotRequired[float]
    speedup: NotRequired[float]
    measured: NotRequired[str]


class Reason(TypedDict):
    reason: str
    before_share: float
    after_share: float
    before_ns: NotRequired[float]
    after_ns: NotRequired[float]
    delta_ns: NotRequired[float]


class Role1(TypedDict):
    role: str
    before: NotRequired[Any]
    after: NotRequired[Any]


class Stalls1(TypedDict):
    before: NotRequired[dict[str, Any]]
    after: NotRequired[dict[str, Any]]
    rule: NotRequired[str]
    reasons: NotRequired[list[Reason]]
    roles: NotRequired[list[Role1]]


Row = TypedDict(
    'Row',
    {
        'class': str,
        'before': int,
        'after': int,
        'delta': int,
    },
)


class LoopMix(TypedDict):
    before: NotRequired[dict[str, Any]]
    after: NotRequired[dict[str, Any]]
    rows: NotRequired[list[Row]]


class TimelineItem(TypedDict):
    role: str
    before: NotRequired[Any]
    after: NotRequired[Any]


class PerformanceDiff(TypedDict):
    time: NotRequired[Time | None]
    stalls: NotRequired[Stalls1 | None]
    loop_mix: NotRequired[LoopMix | None]
    timeline: NotRequired[list[TimelineItem] | None]
    ranked: list[str]


class OrchestrationEdge(TypedDict):
    id: int
    kind: Literal['arrive', 'expect', 'copy', 'commit', 'wait']
    op: int
    barrier: int
    label: str
    phases: NotRequired[list[list[int]]]
    measured: NotRequired[OrchestrationWaitTime]
    slowest: NotRequired[bool]


class Search(TypedDict):
    search_id: str
    kernel: str
    target: str
    shown: NotRequired[int | None]
    best: int | None
    config_keys: list[str]
    counts: dict[str, int]
    info: dict[str, Any]
    rows: list[SearchRow]


class Layouts(TypedDict):
    declared: list[DeclaredLayout]
    values: list[ValueLayout]
    linear: NotRequired[list[LinearLayout]]


class Check(TypedDict):
    expr: str
    summary: NotRequired[str]
    actual: NotRequired[str | None]
    expected: NotRequired[str | None]
    status: Literal['passed', 'failed', 'skipped', 'error']
    message: str
    atol: NotRequired[float | None]
    rtol: NotRequired[float | None]
    max_abs_err: NotRequired[float | None]
    max_rel_err: NotRequired[float | None]
    mismatched: NotRequired[int | None]
    total: NotRequired[int | None]
    first_mismatch: NotRequired[list[int] | None]
    rule: NotRequired[str]
    error: NotRequired[CheckError]
    guards: NotRequired[list[Guard]]
    reference_note: NotRequired[str]


class Roofline(TypedDict):
    kind: Literal['roofline']
    status: Status
    reason: str | None
    measured_by: NotRequired[str | None]
    device: NotRequired[str | None]
    when: NotRequired[str | None]
    summary: NotRequired[str]
    provenance: NotRequired[str]
    name: NotRequired[str]
    dtype: NotRequired[str]
    flops: NotRequired[float | None]
    bytes: NotRequired[float | None]
    counts: NotRequired[Counts]
    intensity: NotRequired[float | None]
    bound: NotRequired[str | None]
    ridge: NotRequired[float | None]
    peak_tflops: float | None
    bandwidth_tbs: float | None
    view: NotRequired[RooflineView]
    measured_peak_tflops: NotRequired[float | None]
    measured_bandwidth_tbs: NotRequired[float | None]
    attainable_tflops: NotRequired[float | None]
    seconds: NotRequired[float | None]
    achieved_tflops: NotRequired[float | None]
    achieved_tbs: NotRequired[float | None]
    compute_fraction: NotRequired[float | None]
    memory_fraction: NotRequired[float | None]
    roof_fraction: NotRequired[float | None]
    ceilings: NotRequired[Ceilings]
    ceilings_label: NotRequired[str]
    points: list[RooflinePoint]
    notes: NotRequired[list[str]]


Measurement: TypeAlias = Bench | Roofline | Capture | Stalls | OtherMeasurement


class Diff(TypedDict):
    id: str
    created: str
    label: NotRequired[str]
    same_key: bool
    source_diff: str
    metadata: list[Metadatum]
    stages: list[StageDiff]
    measurements: NotRequired[list[Measurement1]]
    performance: NotRequired[PerformanceDiff | None]


class Orchestration(TypedDict):
    kind: Literal['orchestration']
    status: Status
    reason: str | None
    kernel: NotRequired[str]
    warp_specialized: NotRequired[bool]
    tasks: list[OrchestrationTask]
    buffers: list[OrchestrationBuffer]
    barriers: list[OrchestrationBarrier]
    ops: list[OrchestrationOp]
    edges: list[OrchestrationEdge]
    rounds: list[OrchestrationRound]
    blocked: list[OrchestrationWait]
    steps: NotRequired[list[OrchestrationStep]]
    simulation: NotRequired[Simulation]
    marks: NotRequired[list[OrchestrationMark]]
    measured: NotRequired[Measured | None]


class Run(TypedDict):
    mode: Literal['gpu', 'interpreter', 'compile']
    summary: NotRequired[str]
    ran: bool
    reason: str | None
    device: NotRequired[str | None]
    grid: list[int] | None
    elapsed_ms: NotRequired[float | None]
    arguments: list[Argument]
    checks: list[Check]
    isolation: NotRequired[dict[str, Any]]
    snapshot: NotRequired[Snapshot]


class TlxReport(TypedDict):
    schema_version: Literal['2.0', '2.1', '2.2', '2.3', '2.4', '2.5', '2.6', '2.7', '2.8']
    id: str
    created: str
    kernel: Kernel
    cell: Cell
    stages: list[Stage]
    metadata: Metadata
    layouts: Layouts
    runs: list[Run]
    measurements: list[Measurement]
    timeline: Timeline | None
    findings: NotRequired[list[Finding]]
    diagnostics: list[Diagnostic]
    device: Device
    versions: Versions
    previous: Diff | None
    view: View
    options: NotRequired[dict[str, Any]]
    kernels: NotRequired[list[str]]
    search: NotRequired[Search | None]
    orchestration: NotRequired[Orchestration | None]
