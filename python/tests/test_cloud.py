"""Object URLs from Python: the wheel built with the `cloud` feature reads a data file and a
backup where they live, on versitygw (an S3 server) started on 127.0.0.1, as it reads the local
files. scripts/test-cloud.sh builds that wheel and runs this file with MDFKIT_CLOUD_TESTS=1;
elsewhere it says so and passes, as the CLI's cloud tests do. The default wheel refuses object URLs
by name (test_errors.py)."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

import mdfkit
from conftest import loud_skip

PUBS = "mdf/itsligo-sampledbs__pubs.mdf"
BACKUP = "bak/dataplat-appveyor-lab__restoretimeclean.bak"
ACCESS, SECRET = "mdfkit-test", "mdfkit-test-secret"


def versitygw() -> str:
    tools = Path.home() / ".cache" / "mdfkit" / "tools" / "bin" / "versitygw"
    found = shutil.which("versitygw") or (str(tools) if tools.is_file() else None)
    if not found:
        loud_skip("versitygw is not installed (scripts/test-cloud.sh installs it)")
    return found


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
    """A bucket `corpus` on a fresh versitygw (posix backend: object `k` is the file `root/corpus/k`),
    with the environment pointing mdfkit at it; yields the bucket's folder."""
    if not os.environ.get("MDFKIT_CLOUD_TESTS"):
        pytest.skip("cloud tests not run: scripts/test-cloud.sh runs them (MDFKIT_CLOUD_TESTS=1)")
    if not mdfkit._native.object_stores:
        loud_skip("this wheel has no object-store support (maturin build --features cloud)")
    root = tmp_path_factory.mktemp("versitygw")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [versitygw(), "--port", f"127.0.0.1:{port}", "--quiet", "--access", ACCESS, "--secret", SECRET]
    server = subprocess.Popen([*command, "posix", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert server.poll() is None and time.monotonic() < deadline, "versitygw did not start"
            time.sleep(0.05)
        with pytest.MonkeyPatch.context() as env:
            env.setenv("AWS_ACCESS_KEY_ID", ACCESS)
            env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
            env.setenv("AWS_REGION", "us-east-1")
            env.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
            (root / "corpus").mkdir()
            yield root / "corpus"
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("name", [PUBS, BACKUP])
def test_files_read_where_they_live_read_as_local_ones(bucket, corpus, name):
    local = corpus / name
    shutil.copyfile(local, bucket / local.name)
    here, there = mdfkit.open(local), mdfkit.open(f"s3://corpus/{local.name}")
    assert there.info.name == here.info.name
    assert [(t.qualified_name, t.rows) for t in there.tables] == [(t.qualified_name, t.rows) for t in here.tables]
    for t in here.tables:
        assert there.table(t.qualified_name).to_arrow().equals(t.to_arrow()), f"{name}: {t.qualified_name}"


def test_a_missing_object_is_not_found(bucket):
    with pytest.raises(mdfkit.NotFoundError) as caught:
        mdfkit.open("s3://corpus/no-such.mdf")
    assert "s3://corpus/no-such.mdf" in str(caught.value)


def test_export_to_a_bucket_prefix_writes_what_a_local_export_writes(bucket, corpus, tmp_path):
    db = mdfkit.open(corpus / PUBS)
    local = mdfkit.export(db, tmp_path, format="arrow")
    uploaded = mdfkit.export(db, "s3://corpus/out/pubs/", format="arrow")
    assert [(r.table, r.rows, r.error) for r in uploaded] == [(r.table, r.rows, None) for r in local]
    for here, there in zip(local, uploaded):
        assert there.path == f"s3://corpus/out/pubs/{Path(here.path).name}"
        assert (bucket / "out" / "pubs" / Path(here.path).name).read_bytes() == Path(here.path).read_bytes()
