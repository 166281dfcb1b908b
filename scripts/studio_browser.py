"""Drives `mdfkit studio` in Debian's Chromium (Playwright, never `playwright install`): the clicks
issue 17 lists, checked against the CLI's own answers. Usage:
    studio_browser.py MDFKIT_BIN ARTIFACT_DIR LABEL FILE [TABLE]
With DAMAGED_PAGE=1:49 in the environment, FILE is a damaged copy: that page must show its
checksum mismatch, and a scan through it must be refused naming it.
Exits non-zero with the first difference found."""

import os

import json
import shlex
import subprocess
import sys
import time
from urllib.parse import urlparse

from playwright.sync_api import sync_playwright

mdfkit, artifacts, label, db = sys.argv[1:5]
wanted_table = sys.argv[5] if len(sys.argv) > 5 else None


def cli_json(*args):
    return json.loads(subprocess.run([mdfkit, *args, "--format", "json"], check=True, capture_output=True).stdout)


def spelled(v):
    """A CLI JSON value as the studio's grid shows it."""
    return "NULL" if v is None else str(v)


def matches(cell, value):
    """A grid cell shows the value, or its start followed by a link "…" to the whole."""
    return cell == value or (cell.endswith("…") and value.startswith(cell[:-1]))


server = subprocess.Popen([mdfkit, "studio", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
try:
    started = time.monotonic()
    line = server.stdout.readline()
    assert line.startswith("mdfkit studio: http://127.0.0.1:"), line
    url = line.split(": ", 1)[1].strip()
    print(f"{label}: URL printed after {1000 * (time.monotonic() - started):.0f} ms: {url.split('?')[0]}")
    origin = url.split("/?")[0]
    problems, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("request", lambda r: requests.append(r.url))
        page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status} for {r.url}"))

        def shot(name):
            page.screenshot(path=f"{artifacts}/{label}-{name}.png", full_page=False)

        page.goto(url)
        assert "token" not in page.url, f"token still in the address bar: {page.url}"
        assert page.url == origin + "/", page.url
        shot("overview")

        damaged = os.environ.get("DAMAGED_PAGE")
        if damaged:
            page.goto(f"{origin}/page/{damaged}")
            shot("damaged-page")
            verdict = page.text_content("#verdict")
            assert verdict.startswith("checksum mismatch") and "bad" in page.get_attribute("#verdict", "class"), verdict
            listed = next(p for p in cli_json("pages", db) if p["page"] == damaged)
            assert listed["status"] == "checksum mismatch", listed
            refused = page.request.get(f"{origin}/rows/{wanted_table}")
            assert refused.status == 422 and f"page {damaged}" in refused.text(), (refused.status, refused.text())
            print(f"{label}: page {damaged} shows {verdict!r}; the rows view refuses: {refused.text().strip()}")
            page.click("nav >> text=Map")
            shot("damaged-map")
            # check in the background: progress, then its findings name the page and paint the map.
            page.click("p.modes >> text=damage")
            page.click("#run-check")
            page.wait_for_selector("#check-progress:has-text('problems found')", timeout=120_000)
            shot("damaged-map-checked")
            assert page.locator(f"ul.problems a[href='/page/{damaged}']").count() > 0, "check did not name the page"
            print(f"{label}: check ran in the background and names page {damaged} on the damage map")
            browser.close()
            requests = [r for r in requests if "/rows/" not in r]

        if not damaged:
            # Tables: the view's JSON twin equals `mdfkit tables --format json`.
            page.click("nav >> text=Tables")
            shot("tables")
            twin = json.loads(page.request.get(origin + "/tables.json").text())
            expected_tables = cli_json("tables", db)
            assert twin == expected_tables, "tables.json differs from mdfkit tables --format json"
            readable = [t for t in expected_tables if t["compression"] == "NONE" and 0 < t["rows"] <= 3000]
            table = wanted_table or min(readable, key=lambda t: t["rows"])["table"]
            print(f"{label}: {len(expected_tables)} tables equal the CLI's; paging through {table}")

            # Table → rows, then "next 100" to the end: exactly `mdfkit cat`'s rows.
            page.click(f"a[href='/table/{table}']")
            shot("table")
            page.click(f"main a[href='/rows/{table}']")
            shot("rows")
            seen, clicks = [], 0
            while True:
                headers = page.eval_on_selector_all("table.rows th", "els => els.map(e => e.textContent)")
                cells = page.eval_on_selector_all(
                    "table.rows tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
                seen += [dict(zip(headers, r)) for r in cells]
                nxt = page.query_selector("p.pager >> text=next 100")
                if not nxt:
                    break
                nxt.click()
                clicks += 1
            expected_rows = cli_json("cat", db, table, "--with-location")
            assert len(seen) == len(expected_rows), f"{len(seen)} rows in the browser, {len(expected_rows)} from mdfkit cat"
            for got, want in zip(seen, expected_rows):
                got = dict(got)
                at = f"{want.pop('__page')}:{want.pop('__slot')}"
                want.pop("__partition", None)
                assert got.pop("page:slot") == at, (got, at)
                assert all(matches(got[k], spelled(v)) for k, v in want.items()) and got.keys() == want.keys(), (got, want)
            print(f"{label}: {len(seen)} rows over {clicks + 1} pages equal mdfkit cat's, no gap, no duplicate")

            # "last": the last rows, read back from the end, are cat's last rows.
            page.click("p.pager >> text=last")
            shot("rows-last")
            last = page.eval_on_selector_all(
                "table.rows tbody tr", "rows => rows.map(r => r.cells[0].textContent)")
            assert last == [r["page:slot"] for r in seen[-len(last):]], "the last page differs from cat's last rows"
            print(f"{label}: 'last' shows cat's last {len(last)} rows")

            # A filter typed in the form: a bounded scan whose rows all match.
            column = next(h for h in headers if h != "page:slot")
            value = seen[0][column].rstrip("…")
            if value != "NULL" and "…" not in seen[0][column]:
                page.fill("form.filter input[name=where]", f"{column}={value}")
                page.click("form.filter button")
                page.wait_for_selector("#filter-status")
                page.wait_for_load_state()
                shot("rows-filtered")
                status = page.text_content("#filter-status")
                cells = page.eval_on_selector_all(
                    f"table.rows tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
                at = headers.index(column)
                assert cells and all(c[at] == value for c in cells), (column, value, cells[:3])
                print(f"{label}: filter {column}={value}: {status}")

            # Back to the first page of rows → the first row's record → its page.
            page.goto(f"{origin}/rows/{table}")
            first = seen[0]
            page.click("table.rows tbody tr >> nth=0 >> a[href^='/record/']")
            shot("record")
            parts = page.eval_on_selector_all("table.fields tbody tr", "rows => rows.map(r => +r.cells[1].textContent)")
            length = int(page.text_content("main p").split(" bytes at offset")[0].split("·")[-1].strip())
            assert sum(parts) == length, f"record parts add up to {sum(parts)}, the record is {length} bytes"
            columns = page.eval_on_selector_all(
                "table.columns tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.cells[6].textContent])")
            for name, value in columns:
                value = value.split(" (off-row")[0]
                assert matches(first[name], value), f"record view {name} = {value!r}, grid cell {first[name]!r}"
            print(f"{label}: record {first['page:slot']}: {len(parts)} parts add up to {length} bytes; {len(columns)} values equal the grid's")

            page_id = first["page:slot"].rsplit(":", 1)[0]
            page.click(f"main a[href='/page/{page_id}']")
            shot("page")
            header = dict(page.eval_on_selector_all(
                "table.fields tbody tr", "rows => rows.map(r => [r.cells[2].textContent, r.cells[3].textContent])"))
            listed = next(p for p in cli_json("pages", db) if p["page"] == page_id)
            assert header["m_pageId"] == listed["page"] and header["m_slotCnt"] == str(listed["slots"])
            assert header["m_freeCnt"] == str(listed["free_bytes"]) and header["m_level"] == str(listed["level"])
            assert header["m_prevPage"] == listed["prev"] and header["m_nextPage"] == listed["next"]
            assert header["Metadata: AllocUnitId"] == str(listed["allocation_unit"])
            assert page.text_content("#verdict") == listed["status"], (page.text_content("#verdict"), listed["status"])
            print(f"{label}: page {page_id} header equals mdfkit pages ({listed['status']})")
            # The footer's command prints the same page: its JSON equals the view's twin.
            command = shlex.split(page.text_content("footer code"))
            assert command[0] == "mdfkit" and command[1] == "page", command
            printed = json.loads(subprocess.run([mdfkit, *command[1:], "--format", "json"], check=True,
                                                capture_output=True).stdout)
            assert printed == json.loads(page.request.get(f"{origin}/page/{page_id}.json").text())
            print(f"{label}: the footer's `{' '.join(command[:2])} ...` prints the page view's JSON twin")

            # An off-row value: its pointer's link opens the LOB record it leads to.
            lob_table = next((t["table"] for t in expected_tables if t["lob"] and t["rows"]), None)
            if lob_table:
                located = json.loads(page.request.get(f"{origin}/rows/{lob_table}.json").text())["locations"]
                for at in located[:20]:
                    page.goto(f"{origin}/record/{at}")
                    links = page.locator("table.columns small a")
                    if links.count():
                        target = links.first.text_content()
                        links.first.click()
                        page.wait_for_url(f"{origin}/record/{target}")
                        shot("lob")
                        kind = page.text_content("main p").split(" · ")[0]
                        assert kind == "BLOB_FRAGMENT", kind
                        print(f"{label}: {lob_table} row {at}'s off-row value links to {target}, a {kind}")
                        # Down the chain: each LOB node links the records below it, by click.
                        while page.locator("table.lob-links a").count():
                            below = page.locator("table.lob-links a").first.text_content()
                            page.locator("table.lob-links a").first.click()
                            page.wait_for_url(f"{origin}/record/{below}")
                            print(f"{label}: LOB node -> {below}: {page.text_content('#lob-node')}")
                        assert page.text_content("#lob-node").startswith(("DATA", "SMALL_ROOT")), "the chain ends in data"
                        break
                else:
                    print(f"{label}: {lob_table}'s first 20 rows hold their LOB values in row")

            # The map: a click on the page's cell opens that page.
            page.click("nav >> text=Map")
            shot("map")
            file_id, number = (int(x) for x in page_id.split(":"))
            img = page.locator(f"img.map[data-file='{file_id}']")
            cell, columns = int(img.get_attribute("data-cell")), int(img.get_attribute("data-columns"))
            img.click(position={"x": (number % columns) * cell + 1, "y": (number // columns) * cell + 1})
            page.wait_for_url(f"{origin}/page/{page_id}")
            print(f"{label}: the map's cell of page {page_id} opens it")
            page.goto(f"{origin}/map?mode=owner")
            shot("map-owner")
            owners = json.loads(page.request.get(f"{origin}/map.json?mode=owner").text())["legend"]
            assert any(l["label"] == table for l in owners), f"{table} not in the owner legend"

            browser.close()
    elsewhere = [r for r in requests if urlparse(r).hostname != "127.0.0.1"]
    assert not elsewhere, f"requests to other hosts: {elsewhere}"
    assert not problems, problems
    print(f"{label}: {len(requests)} requests, all to 127.0.0.1; no console errors")
finally:
    server.terminate()
    server.wait()
