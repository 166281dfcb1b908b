"""The expected-value files of the corpus (ground truth from the SQL scripts that built each
database) are reproduced through the Python path: `Table.to_arrow()` read as Python values."""

import datetime
import decimal
import json

import mdfkit
from conftest import spell


def test_expected_rows_through_python(corpus):
    checked = 0
    files = sorted((corpus / "expected").glob("*.expected.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text())
        db = mdfkit.open(corpus / data["corpus_file"])
        names = {t.qualified_name for t in db.tables}
        for want_table in data["tables"]:
            qualified = f"{want_table['schema']}.{want_table['name']}"
            assert qualified in names, (data["corpus_file"], qualified)
            t = db.table(qualified)
            assert t.rows == want_table["row_count"], qualified
            if not want_table.get("rows"):
                continue
            unknown = {c["name"] for c in want_table["columns"] if c.get("unknown")}
            table = t.to_arrow()
            assert table.num_rows == want_table["row_count"], qualified
            ours = [{k: spell(v) for k, v in row.items()} for row in table.to_pylist()]
            for want in want_table["rows"]:
                want = {k: v for k, v in want.items() if k not in unknown}
                assert any(all(row.get(k) == v for k, v in want.items()) for row in ours), (qualified, want)
                checked += 1
    assert checked > 150, f"only {checked} rows compared"
