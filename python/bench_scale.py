"""Rows/s of one table read by one process, by its splits read in turn in one process, by Dask
(distributed.LocalCluster, N worker processes) and by Spark (local[N], the `mdfkit` data source),
with the time to plan the splits and the overhead per split. Not part of the tests.

    cargo run -p mdfkit-forge --example bench -- --forge-only --gb 1    # prints the database's path
    python python/bench_scale.py --db $CARGO_TARGET_DIR/bench/1g/bench1g.mdf --table dbo.Fact

Compare like with like: a release wheel (`maturin build --release`). Each engine's run reads every
column; Spark's computes a count and a sum over every row batch handed to the JVM, Dask's the
length of every partition. The engines' runs start warm (cluster and session up, one read done).
"""

import argparse
import sys
import time
from pathlib import Path

# Import the installed package (with its native module), not the sources beside this script.
HERE = Path(__file__).resolve().parent
sys.path = [p for p in sys.path if Path(p or ".").resolve() != HERE]
import mdfkit  # noqa: E402


def timed(what, rows, run, repeat):
    best = min(_once(run) for _ in range(repeat))
    print(f"{what:<46} {best:8.2f} s {rows / best / 1e6:8.2f} M rows/s", flush=True)
    return best


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

    single = timed("one process, one thread (Table.iter_batches)", rows, one_process, args.repeat)
    timed("its splits in turn, one process", rows, splits_in_turn, args.repeat)

    import distributed

    from mdfkit import dask as mdfkit_dask

    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        def dask_run():
            frame = mdfkit_dask.read_table(args.db, args.table, target_bytes=target, source_column=None)
            assert frame.map_partitions(len).sum().compute() == rows

        dask_run()
        dask = timed(f"Dask, {args.workers} worker processes", rows, dask_run, args.repeat)

    from pyspark.sql import SparkSession, functions

    from mdfkit import spark as mdfkit_spark

    spark = (SparkSession.builder.master(f"local[{args.workers}]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", str(args.workers)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    mdfkit_spark.register(spark)
    first = spark.read.format("mdfkit").option("table", args.table).load(args.db).columns[0]

    def spark_run():
        frame = (spark.read.format("mdfkit").option("table", args.table)
                 .option("target_bytes", str(target)).load(args.db))
        got = frame.agg(functions.count(functions.lit(1)), functions.sum(first)).collect()[0]
        assert got[0] == rows

    spark_run()
    sparks = timed(f"Spark local[{args.workers}]", rows, spark_run, args.repeat)
    spark.stop()
    ideal = single / args.workers
    for name, seconds in (("Dask", dask), ("Spark", sparks)):
        print(f"{name}: {rows / seconds / (rows / single):.2f}x one process's rows/s on {args.workers} cores "
              f"({rows / seconds / (args.workers * rows / single):.0%} of {args.workers} x one process); "
              f"overhead over a perfect split of one process's time: "
              f"{(seconds - ideal) / len(splits) * 1000:.0f} ms per split")


if __name__ == "__main__":
    main()
