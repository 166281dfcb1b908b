"""Times `Table.to_arrow()` of the largest corpus table against the CLI's export of the same table
to Arrow IPC (`mdfkit export --format arrow`), and prints both. Not part of the tests.

    python python/bench.py [--repeat 5] [--corpus ../shared/corpus] [--bin target/release/mdfkit]
    python python/bench.py --db $CARGO_TARGET_DIR/bench/1g/bench1g.mdf --table dbo.Fact

(`--db`/`--table` time any table, e.g. one of the databases `cargo run --release -p mdfkit-forge
--example bench` forges.) Both sides decode on one thread (the CLI with `--threads 1`), so they
read the same rows in the same order.

Compare like with like: a release wheel (`pip install ./python`, or `maturin build --release`)
against a release CLI (`cargo build --release -p mdfkit-cli`).
"""

import argparse
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
    args = parser.parse_args()

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
    python_s = best_of(args.repeat, table.to_arrow)

    out = Path(tempfile.mkdtemp())
    try:
        command = [args.bin, "export", str(path), "--table", table.qualified_name, "--format", "arrow", "--threads", "1", "-o", str(out)]
        cli_s = best_of(args.repeat, lambda: subprocess.run(command, check=True, capture_output=True))
        ipc = out / f"{table.schema_name}.{table.name}.arrows"
        same = pa.ipc.open_stream(ipc).read_all().equals(result)
    finally:
        shutil.rmtree(out, ignore_errors=True)

    def line(name: str, seconds: float) -> str:
        return f"{name:<34} {seconds * 1000:9.1f} ms  {table.rows / seconds:12,.0f} rows/s  {size / seconds / 1e6:8.1f} MB/s"

    print(f"best of {args.repeat}, {size / 1e6:.1f} MB of Arrow data; same data: {same}")
    print(line("python Table.to_arrow()", python_s))
    print(line(f"CLI export --format arrow ({Path(args.bin).parent.name})", cli_s))


if __name__ == "__main__":
    main()
