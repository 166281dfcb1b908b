"""Rows/s of one table read by one process, by its splits read in turn in one process, by Dask
(distributed.LocalCluster, N worker processes) and by Spark (local[N]: the JVM data source of
jvm/ when --jar is given, and the Python one), with the time to plan the splits and the overhead
per split. Not part of the tests.

    cargo run -p mdfkit-forge --example bench -- --forge-only --gb 1    # prints the database's path
    cargo build --release -p mdfkit-cli && scripts/spark-jar.sh          # the tool and the jar
    python python/bench_scale.py --db $CARGO_TARGET_DIR/bench/1g/bench1g.mdf --table dbo.Fact \
        --mdfkit-bin $CARGO_TARGET_DIR/release/mdfkit --jar $CARGO_TARGET_DIR/jvm/mdfkit-spark.jar

Compare like with like: a release wheel (`maturin build --release`) and a release `mdfkit`.
Every run reads every column: Spark's writes the DataFrame to the `noop` sink (each row handed
to the engine, nothing done with it), Dask's computes the length of every partition; the one
process of the JVM source's reference is `mdfkit read-split` of the whole table to /dev/null.
The engines' runs start warm (cluster and session up, one read done). The Spark runs' CPU-seconds
are split by part: the JVM's task threads, its JIT compilers, its garbage collector, its other
threads, and the `mdfkit` processes it ran (Linux /proc). `--no-python-reads` leaves
out the runs that read with the wheel (this process's, Dask's and the Python data source's: for a
debug wheel); `--no-python-source` leaves out the Python data source only (minutes on 8 GB). The
CPU-seconds of this process's reads and of Dask's worker processes are measured too: on a shared
machine they compare where wall-clock times do not.
"""

import argparse
import collections
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Import the installed package (with its native module), not the sources beside this script.
HERE = Path(__file__).resolve().parent
sys.path = [p for p in sys.path if Path(p or ".").resolve() != HERE]
import mdfkit  # noqa: E402


def timed(what, rows, run, repeat, cpu=None):
    """The best of `repeat` runs, as (seconds, CPU-seconds); with `cpu` (a function giving
    CPU-seconds so far, or a Counter of them by part), the CPU time of that run too, by part: on a
    shared machine, what the work cost whatever the others took (else 0)."""
    runs = []
    for _ in range(repeat):
        before = _parts(cpu)
        seconds = _once(run)
        spent = _parts(cpu)
        spent.subtract(before)
        runs.append((seconds, spent))
    best, spent = min(runs, key=lambda r: r[0])
    total = sum(spent.values())
    used = f" {total:6.2f} CPU-s {rows / total / 1e6:6.2f} M rows/CPU-s" if total else ""
    print(f"{what:<46} {best:8.2f} s {rows / best / 1e6:8.2f} M rows/s{used}", flush=True)
    if len(spent) > 1:
        print(" " * 8 + ", ".join(f"{part} {seconds:.2f}" for part, seconds in spent.most_common()), flush=True)
    return best, total


def _parts(cpu):
    """CPU-seconds so far by part: `cpu()` when it gives a Counter, else one part."""
    if cpu is None:
        return collections.Counter()
    so_far = cpu()
    return so_far if isinstance(so_far, collections.Counter) else collections.Counter(all=so_far)


def children_cpu():
    """CPU-seconds of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Threads of a Spark JVM (local mode: driver and executors), by what they do.
JVM_THREADS = [("tasks", "Executor task"), ("JIT", "CompilerThre"), ("GC", "GC Thread"), ("GC", "G1 ")]


def jvm_cpu(pid):
    """CPU-seconds of the JVM `pid` by part (Linux): its Spark tasks' threads, the JIT compilers,
    the garbage collector, its other threads, and the `mdfkit` processes it ran and waited for."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu():
        parts = collections.Counter()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        parts["mdfkit processes"] = (int(fields[13]) + int(fields[14])) / tick
        for thread in Path(f"/proc/{pid}/task").iterdir():
            try:
                stat = (thread / "stat").read_text()
            except OSError:
                continue  # ended since the listing
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat.rsplit(")", 1)[1].split()
            part = next((part for part, prefix in JVM_THREADS if name.startswith(prefix) or prefix in name), "other")
            parts[part] += (int(fields[11]) + int(fields[12])) / tick
        return parts
    return cpu


def _once(run):
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--target-mb", type=float, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--jar", help="the JVM data source's jar (scripts/spark-jar.sh)")
    parser.add_argument("--mdfkit-bin", default=os.environ.get("MDFKIT_BIN") or shutil.which("mdfkit"),
                        help="the mdfkit tool the JVM data source runs (a release build)")
    parser.add_argument("--no-python-reads", action="store_true",
                        help="leave out the reads through the wheel (this process, Dask, the Python data source)")
    parser.add_argument("--no-python-source", action="store_true",
                        help="leave out Spark's Python data source (the slowest run)")
    args = parser.parse_args()
    db = mdfkit.open(args.db)
    table = db.table(args.table)
    rows = table.rows
    started = time.perf_counter()
    target = max(1, int(args.target_mb * (1 << 20)))
    splits = table.splits(target_bytes=target)
    planning = time.perf_counter() - started
    print(f"{args.table}: {rows} rows, {table.pages} pages; {len(splits)} splits of {args.target_mb} MB "
          f"planned in {planning:.3f} s; {args.workers} workers")

    def one_process():
        assert sum(b.num_rows for b in table.iter_batches()) == rows

    def splits_in_turn():
        assert sum(mdfkit.read_split(s).read_all().num_rows for s in splits) == rows

    singles = []  # (name, (seconds, CPU-seconds)) of the one-process references
    if args.jar:
        whole = subprocess.run([args.mdfkit_bin, "splits", args.db, "--table", args.table, "--target-bytes",
                                str(1 << 60)], check=True, capture_output=True, text=True).stdout

        def one_tool_process():
            subprocess.run([args.mdfkit_bin, "read-split", "--spark-types"], input=whole.encode(), check=True,
                           stdout=subprocess.DEVNULL)

        singles.append(("mdfkit read-split", timed("one process, one thread (mdfkit read-split)", rows,
                                                   one_tool_process, args.repeat, children_cpu)))
    engines = []
    if not args.no_python_reads:
        singles.append(("Table.iter_batches", timed("one process, one thread (Table.iter_batches)", rows,
                                                    one_process, args.repeat, time.process_time)))
        timed("its splits in turn, one process", rows, splits_in_turn, args.repeat, time.process_time)

        import distributed

        from mdfkit import dask as mdfkit_dask

        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            def dask_run():
                frame = mdfkit_dask.read_table(args.db, args.table, target_bytes=target, source_column=None)
                assert frame.map_partitions(len).sum().compute() == rows

            dask_run()
            engines.append(("Dask", timed(f"Dask, {args.workers} worker processes", rows, dask_run, args.repeat,
                                          lambda: sum(client.run(time.process_time).values()))))

    from pyspark.sql import SparkSession, functions

    from mdfkit import spark as mdfkit_spark

    builder = (SparkSession.builder.master(f"local[{args.workers}]").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(args.workers)))
    if args.jar:
        builder = builder.config("spark.jars", args.jar)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = mdfkit_spark.register(spark, command=args.mdfkit_bin)
    assert jvm == bool(args.jar), "the jar was given but its data source did not load"

    def spark_run(source):
        frame = spark.read.format(source).option("table", args.table).option("target_bytes", str(target)).load(args.db)
        frame.write.format("noop").mode("overwrite").save()

    sources = [("Spark JVM source", "mdfkit")] if jvm else []
    if not (args.no_python_reads or args.no_python_source):
        sources.append(("Spark Python source", "mdfkit_python"))
    # The JVM (driver and executors: local mode) and the tools it ran.
    spark_cpu = jvm_cpu(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    for name, source in sources:
        spark_run(source)
        engines.append((name, timed(f"{name} local[{args.workers}]", rows, lambda: spark_run(source), args.repeat,
                                    spark_cpu)))
    spark.stop()
    for name, (seconds, cpu) in engines:
        for reference, (single, single_cpu) in singles:
            ideal = single / args.workers
            print(f"{name} against {reference}: {rows / seconds / (rows / single):.2f}x one process's rows/s on "
                  f"{args.workers} cores ({rows / seconds / (args.workers * rows / single):.0%} of {args.workers} x "
                  f"one process); overhead over a perfect split of one process's time: "
                  f"{(seconds - ideal) / len(splits) * 1000:.0f} ms per split")
            if cpu and single_cpu:
                # On free cores an engine's wall time is at least its CPU time over the workers.
                print(f"    CPU: {(cpu - single_cpu) / len(splits) * 1000:.0f} ms per split over one process; at most "
                      f"{args.workers * single_cpu / cpu:.2f}x one process's rows/s on {args.workers} free cores")


if __name__ == "__main__":
    main()
