#!/usr/bin/env python3
"""Writes the synthetic format-3 traces of this folder (see README.md): not recordings, but
timelines made up to the format (docs/trace-format.md) so that the reader, the timeline summary
and the AP evidence have inputs whose figures are known exactly. Run it from this folder; the
unit tests (tests/unit/test_timeline.cpp) assert the figures given in the comments below."""

US = 1000  # ns


def write(path, lines):
    with open(path, "w") as f:
        f.write("".join("\t".join(str(x) for x in line) + "\n" for line in lines))


def sync_copy():
    """step_kernel launched 50 times, each followed by a synchronous 4-byte device-to-host copy
    (a convergence flag read back) and 300 us of host work before the next launch: the pattern
    of issue #30. Wall 24,250 us; GPU busy 5,950 us (24.5%); 49 gaps of 300 us recur."""
    t0 = 5_000_000_000
    pid, ctx, stream, thread = 100, 1, 7, 11
    lines = [("# optimas-trace 3",), ("P", pid, t0)]
    corr = 0
    records = 0

    def copy(direction, src, dst, nbytes, start, dur, call=True):
        nonlocal corr, records
        corr += 1
        lines.append(("M", direction, src, dst, nbytes, 0, ctx, stream, start, start + dur, 0, corr))
        records += 1
        if call:
            lines.append(("R", "cudaMemcpy", thread, start - 10 * US, start + dur + 1 * US, corr))
            records += 1
        return start + dur

    t = t0 + 2000 * US  # 2 ms of start-up before the first GPU work
    t = copy("HtoD", "pageable", "device", 4 << 20, t, 400 * US)
    corr += 1
    lines.append(("S", "device", 4 << 20, 0, ctx, stream, t + 20 * US, t + 70 * US, 0, corr))
    records += 1
    t += 70 * US + 30 * US
    lines.append(("K", 0, "_Z11step_kernelPfPKfPi", "step_kernel(float*, float const*, int*)"))
    for i in range(50):
        corr += 1
        lines.append(("L", 0, 0, ctx, stream, 1024, 1, 1, 256, 1, 1, 0, 0, 32, t, t + 100 * US))
        t = copy("DtoH", "device", "pageable", 4, t + 105 * US, 2 * US)
        t += 300 * US
    t = copy("DtoH", "device", "pageable", 4 << 20, t, 400 * US)
    corr += 1
    lines.append(("R", "cudaDeviceSynchronize", thread, t + 5 * US, t + 8 * US, corr))
    lines.append(("Y", "context", ctx, 0, t + 5 * US, t + 8 * US, corr))
    records += 2
    lines.append(("E", 50, 0, t + 1000 * US, records))
    write("sync-copy/trace-100.tsv", lines)


def overlap():
    """update launched 20 times back to back on stream 13 (3 us between launches) while 1 MiB
    asynchronous copies from pinned memory run on stream 14 under each: a pipeline that keeps
    the GPU busy. Wall 4,757 us; busy 4,000 us (84.1%); 500 us start-up, 200 us at the end."""
    t0 = 9_000_000_000
    pid, ctx = 200, 1
    lines = [("# optimas-trace 3",), ("P", pid, t0),
             ("K", 0, "_Z6updatePdPKdi", "update(double*, double const*, int)")]
    t = t0 + 500 * US
    records = 0
    for i in range(20):
        lines.append(("L", 0, 0, ctx, 13, 528, 1, 1, 128, 1, 1, 0, 0, 40, t, t + 200 * US))
        lines.append(("M", "HtoD", "pinned", "device", 1 << 20, 0, ctx, 14, t + 20 * US, t + 120 * US, 1, 100 + i))
        records += 1
        t += 200 * US + (3 * US if i < 19 else 0)
    lines.append(("R", "cudaStreamSynchronize", 21, t - 150 * US, t + 2 * US, 999))
    lines.append(("Y", "stream", ctx, 13, t - 150 * US, t + 2 * US, 999))
    records += 2
    lines.append(("E", 20, 0, t + 200 * US, records))
    write("overlap/trace-200.tsv", lines)


if __name__ == "__main__":
    import os
    for d in ("sync-copy", "overlap"):
        os.makedirs(d, exist_ok=True)
    sync_copy()
    overlap()
