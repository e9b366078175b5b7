"""compute-sanitizer and ConSan output, as text, for the parser tests.

REALISTIC SAMPLES, WRITTEN BY HAND: not captured on our H200. They follow the formats of
compute-sanitizer 2023-2025 as documented by NVIDIA and as seen in public logs (``========= ``
prefixes, ``Race reported between Write access at KERNEL+0xOFF in FILE:LINE``, ``and Read access
at ... [N hazards]``, memcheck's ``Invalid __global__ write of size 4 bytes`` / ``by thread (x,y,z)
in block (x,y,z)`` / ``Address ... is out of bounds``, the older ``at 0xOFF in FILE:LINE:KERNEL``
spelling, hazard-mode ``Potential WAR hazard detected at __shared__``), and CUDA's device-side assert
line that Triton's ConSan prints. What the README's TLX facts record is reproduced in kind: racecheck attributing a
race in a correct TMA ring to the kernel's ``def`` line; synccheck reporting only the launch failure
of the parity bug. Each sample is a function of the file and lines, so a test can aim it at a real
kernel; the interleaved program output (no prefix) must be ignored by the parser.
"""

from __future__ import annotations

_LAUNCH_FAILED = ('========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" '
                  "on CUDA API call to cuStreamSynchronize.")


def racecheck_analysis(path: str, kernel: str, write_line: int, read_line: int) -> str:
    return f"""========= COMPUTE-SANITIZER
Traceback-free program output line that is not the sanitizer's
========= Error: Race reported between Write access at {kernel}+0x3a0 in {path}:{write_line}
=========     and Read access at {kernel}+0x6f0 in {path}:{read_line} [4096 hazards]
=========     and Read access at {kernel}+0x710 in {path}:{read_line} [4096 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def racecheck_at_def_line(path: str, kernel: str, def_line: int) -> str:
    """A correct TMA ring: the race is attributed to the kernel's entry (as measured: README, TLX facts)."""
    return f"""========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at {kernel}+0x1f30 in {path}:{def_line}
=========     and Read access at {kernel}+0x2a80 in {path}:{def_line} [2048 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def racecheck_hazard_mode(path: str, kernel: str, write_line: int, read_line: int) -> str:
    return f"""========= COMPUTE-SANITIZER
========= Warning: (Race) Potential WAR hazard detected at __shared__ 0x400 in block (0,0,0) :
=========     Read Thread (64,0,0) at {kernel}+0x6f0 in {path}:{read_line}
=========     Write Thread (0,0,0) at {kernel}+0x3a0 in {path}:{write_line}
=========     Current Value : 0, Incoming Value : 1065353216
=========
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
"""


def racecheck_old_format(path: str, kernel: str, write_line: int, read_line: int) -> str:
    return f"""========= COMPUTE-SANITIZER
========= ERROR: Race reported between Write access at 0x00000278 in {path}:{write_line}:{kernel}
=========     and Read access at 0x00000298 in {path}:{read_line}:{kernel} [6144 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def racecheck_offsets_only(kernel: str, write_off: int, read_off: int) -> str:
    """No line info in the cubin: only offsets (the SASS of the Artifact maps them)."""
    return f"""========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at {kernel}+0x{write_off:x}
=========     and Read access at {kernel}+0x{read_off:x} [512 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def memcheck_oob(path: str, kernel: str, line: int, threads: int = 3) -> str:
    body = "".join(f"""========= Invalid __global__ write of size 4 bytes
=========     at {kernel}+0x1c0 in {path}:{line}
=========     by thread ({t},0,0) in block (0,0,0)
=========     Address 0x7f3c00001{t:03x} is out of bounds
=========     and is 8796093014016 bytes after the nearest allocation at 0x7f2c00000000 of size 8192 bytes
=========
""" for t in range(threads))
    return f"""========= COMPUTE-SANITIZER
{body}{_LAUNCH_FAILED}
=========
RuntimeError: CUDA error: unspecified launch failure
========= ERROR SUMMARY: {threads + 1} errors
"""


def synccheck_launch_failure_only() -> str:
    """The parity bug of the README's TLX facts under synccheck: only the launch failure."""
    return f"""========= COMPUTE-SANITIZER
{_LAUNCH_FAILED}
=========
========= ERROR SUMMARY: 1 error
"""


def synccheck_divergent(path: str, kernel: str, line: int) -> str:
    return f"""========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp.
=========     at {kernel}+0x5b0 in {path}:{line}
=========     by thread (32,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
"""


def initcheck_uninitialized(path: str, kernel: str, line: int) -> str:
    return f"""========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at {kernel}+0x90 in {path}:{line}
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f2c00000000
=========
========= ERROR SUMMARY: 1 error
"""


def clean(tool: str) -> str:
    summary = ("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" if tool == "racecheck"
               else "ERROR SUMMARY: 0 errors")
    return f"========= COMPUTE-SANITIZER\n========= {summary}\n"


def consan_asserts(path: str, kernel: str, line: int, message: str, threads: int = 4) -> str:
    """CUDA's device-side assert lines (one per failing thread), then the host's error."""
    rows = "".join(f"{path}:{line}: {kernel}: block: [0,0,0], thread: [{128 + t},0,0] Assertion `{message}` failed.\n"
                   for t in range(threads))
    return rows + "RuntimeError: CUDA error: device-side assert triggered\n"
