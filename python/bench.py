"""Times reading a table from Python against the CLI's export of the same table to Arrow IPC
(`mdfkit export --format arrow --threads 1`): `Table.to_arrow()`, `Table.iter_batches()`,
`Table.to_pandas()` (also with Arrow-backed columns) and `Table.to_polars()`, each in a child process (best of --repeat runs),
with the child's peak RSS, next to the CLI's time. Not part of the tests.

    python python/bench.py [--repeat 5] [--corpus ../shared/corpus] [--bin target/release/mdfkit]
    python python/bench.py --db $CARGO_TARGET_DIR/bench/v2-1g/bench1g.mdf --table dbo.Fact

(`--db`/`--table` time any table, e.g. one of the databases `cargo run --release -p mdfkit-forge
--example bench` forges.) Both sides decode on one thread (the CLI with `--threads 1`), so they
read the same rows in the same order. The issue's targets: `to_arrow` and `iter_batches` within
10% of the CLI; `to_pandas` / `to_polars` without a second copy of the data (their peak RSS
about one copy above `to_arrow`'s, not two).

Compare like with like: a release wheel (`pip install ./python`, or `maturin build --release`)
against a release CLI (`cargo build --release -p mdfkit-cli`).
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import sys

import pyarrow as pa

# Import the installed package (with its native module), not the sources beside this script.
HERE = Path(__file__).resolve().parent
sys.path = [p for p in sys.path if Path(p or ".").resolve() != HERE]
import mdfkit  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def largest_table(corpus: Path):
    """(path, table) of the readable corpus table with the most used pages."""
    best = None
    for path in sorted(corpus.glob("*/*.mdf")) + sorted(corpus.glob("*/*.bak")):
        try:
            db = mdfkit.open(path)
        except mdfkit.Error:
            continue
        for t in db.tables:
            if best is None or t.pages > best[1].pages:
                try:
                    t.to_arrow(limit=1)
                except mdfkit.Error:
                    continue
                best = (path, t)
    return best


def best_of(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


#: What each timed case does with the table (the result is dropped after).
CASES = {
    "to_arrow": lambda t: t.to_arrow(),
    "iter_batches": lambda t: sum(b.num_rows for b in t.iter_batches()),
    "to_pandas": lambda t: t.to_pandas(),
    # Arrow-backed columns: pandas keeps the Arrow buffers (decimals stay decimals, not objects).
    "to_pandas_arrow": lambda t: t.to_pandas(types_mapper=__import__("pandas").ArrowDtype),
    "to_polars": lambda t: t.to_polars(),
}


def child(case: str, path: str, table: str) -> None:
    """One run of `case` in this process: prints its seconds and the peak RSS in MB as JSON."""
    t = mdfkit.open(path).table(table)
    started = time.perf_counter()
    result = CASES[case](t)
    seconds = time.perf_counter() - started
    del result
    # VmHWM, not getrusage's ru_maxrss: Linux carries the latter over from the parent across exec.
    status = Path("/proc/self/status").read_text()
    peak_kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    print(json.dumps({"seconds": seconds, "peak_mb": peak_kb / 1024}))


def run_child(case: str, path: Path, table: str) -> dict:
    command = [sys.executable, __file__, "--child", case, "--db", str(path), "--table", table]
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=os.environ.get("MDFKIT_CORPUS", REPO.parent / "shared" / "corpus"))
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    default_bin = next(
        (str(p) for p in (target / "release" / "mdfkit", target / "debug" / "mdfkit") if p.is_file()),
        shutil.which("mdfkit") or "mdfkit",
    )
    parser.add_argument("--bin", default=os.environ.get("MDFKIT_BIN", default_bin))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db", help="a database file to time instead of the corpus' largest table")
    parser.add_argument("--table", help="with --db: the table")
    parser.add_argument("--child", choices=sorted(CASES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.db, args.table)

    if args.db:
        path = Path(args.db)
        table = mdfkit.open(path).table(args.table)
    else:
        found = largest_table(Path(args.corpus))
        if found is None:
            raise SystemExit(f"no readable table in {args.corpus}")
        path, table = found
    print(f"table: {table.qualified_name} in {path.name}: {table.rows} rows, {table.pages} pages")

    result = table.to_arrow()
    size = result.nbytes

    out = Path(tempfile.mkdtemp())
    try:
        command = [args.bin, "export", str(path), "--table", table.qualified_name, "--format", "arrow", "--threads", "1", "-o", str(out)]
        cli_s = best_of(args.repeat, lambda: subprocess.run(command, check=True, capture_output=True))
        ipc = out / f"{table.schema_name}.{table.name}.arrows"
        same = pa.ipc.open_stream(ipc).read_all().equals(result)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    del result

    def line(name: str, seconds: float, peak_mb: str = "") -> str:
        return (
            f"{name:<34} {seconds * 1000:9.1f} ms  {table.rows / seconds:12,.0f} rows/s  "
            f"{size / seconds / 1e6:8.1f} MB/s  {cli_s / seconds * 100:5.0f}% of CLI  {peak_mb:>8}"
        )

    print(f"best of {args.repeat}, {size / 1e6:.1f} MB of Arrow data; same data as the CLI's: {same}")
    print(f"{'':<34} {'':>12}  {'':>19}  {'':>13}  {'':>12}  {'peak RSS':>8}")
    print(line(f"CLI export --format arrow ({Path(args.bin).parent.name})", cli_s))
    for case in CASES:
        runs = [run_child(case, path, table.qualified_name) for _ in range(args.repeat)]
        best = min(r["seconds"] for r in runs)
        peak = min(r["peak_mb"] for r in runs)
        name = "to_pandas(types_mapper=pd.ArrowDtype)" if case == "to_pandas_arrow" else f"{case}()"
        print(line(f"python Table.{name}", best, f"{peak:.0f} MB"))


if __name__ == "__main__":
    main()
