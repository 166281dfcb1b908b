//! The `mdfkit` binary as a user runs it: output, exit codes, help.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn corpus() -> Option<PathBuf> {
    let dir = std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    if dir.join("MANIFEST.tsv").is_file() {
        return Some(dir);
    }
    assert!(std::env::var_os("CI").is_none(), "corpus not found at {}: CI must run the CLI tests", dir.display());
    eprintln!("\n*** SKIPPED: corpus not found at {} (set MDFKIT_CORPUS) ***\n", dir.display());
    None
}

fn mdfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mdfkit")).args(args).output().expect("run mdfkit")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `mdfkit cat --format csv FILES... dbo.steps OPTIONS...`, which must succeed.
fn cat_steps(files: &[String], options: &[&str]) -> Output {
    let mut args = vec!["cat", "--format", "csv"];
    args.extend(files.iter().map(String::as_str));
    args.push("dbo.steps");
    args.extend(options);
    let run = mdfkit(&args);
    assert_eq!(run.status.code(), Some(0), "{options:?}: {}", text(&run.stderr));
    run
}

/// The `dt` column (the second) of `cat dbo.steps --format csv`, to the second, sorted.
fn step_times(run: &Output) -> Vec<String> {
    let mut dts: Vec<String> =
        text(&run.stdout).lines().skip(1).map(|l| l.split(',').nth(1).unwrap().chars().take(19).collect()).collect();
    dts.sort();
    dts
}

#[test]
fn exit_codes_tell_success_bad_input_and_other_failures() {
    let Some(dir) = corpus() else { return };
    let pubs = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let pubs = pubs.to_str().unwrap();
    let ok = mdfkit(&["tables", pubs, "--format", "csv"]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(text(&ok.stdout).contains("dbo.authors,2105058535,U,clustered,1,23,"), "{}", text(&ok.stdout));

    let manifest = dir.join("MANIFEST.tsv");
    let bad = mdfkit(&["info", manifest.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    let message = text(&bad.stderr);
    assert!(
        message.starts_with("mdfkit: ") && message.contains("MANIFEST.tsv") && message.lines().count() == 1,
        "{message}"
    );

    let unknown = mdfkit(&["schema", pubs, "dbo.nosuchtable"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(text(&unknown.stderr).contains("no table named dbo.nosuchtable"));
}

#[test]
fn cat_returns_ghost_records_only_when_asked() {
    let Some(dir) = corpus() else { return };
    let db = dir.join("mdf/sirratul-chef-zilla__app_data-2c9f8707-aspnet-chef-zilla-20200724080934.mdf");
    let db = db.to_str().unwrap();
    let live = mdfkit(&["cat", db, "Carts", "--format", "csv"]);
    assert_eq!(text(&live.stdout).lines().count(), 1, "header only: the table has no live rows");
    let all = mdfkit(&["cat", db, "Carts", "--format", "csv", "--include-ghosts"]);
    let out = text(&all.stdout);
    assert!(out.lines().next().unwrap().ends_with(",__ghost"));
    assert!(out.contains("22,30d9d212-09a0-4acb-a365-b1af77db2df4,6,Air Fryer Beef Chops,300,3,1"), "{out}");
}

#[test]
fn cat_names_where_each_row_is_stored_and_filters_by_page() {
    let Some(dir) = corpus() else { return };
    let pubs = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let file = std::fs::read(&pubs).expect("pubs.mdf");
    let pubs = pubs.to_str().unwrap();
    let out = mdfkit(&["cat", pubs, "dbo.authors", "--columns", "au_id", "--with-location", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = text(&out.stdout);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("au_id,__partition,__page,__slot"));
    let rows: Vec<(String, u32, usize)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[1], "1", "one partition, numbered 1");
            let page = f[2].strip_prefix("1:").expect("file 1").parse().expect("page number");
            (f[0].to_string(), page, f[3].parse().expect("slot"))
        })
        .collect();
    assert_eq!(rows.len(), 23);
    // Each (page, slot) is checked against the file's own bytes: the slot array at the end of the
    // page points at a record holding the row's key (au_id, char(11), stored as ASCII).
    let mut per_page = std::collections::BTreeMap::new();
    for (au_id, page, slot) in &rows {
        let bytes = &file[*page as usize * 8192..][..8192];
        let slot_at = 8192 - 2 * (slot + 1);
        let record = usize::from(u16::from_le_bytes([bytes[slot_at], bytes[slot_at + 1]]));
        assert!(bytes[record..].starts_with(&[0x30]) || bytes[record..].starts_with(&[0x10]), "a data record");
        let stored = &bytes[record..(record + 60).min(8192)];
        assert!(stored.windows(11).any(|w| w == au_id.as_bytes()), "{au_id} at 1:{page} slot {slot}");
        *per_page.entry(*page).or_insert(0u16) += 1;
    }
    for (page, count) in &per_page {
        let slots = u16::from_le_bytes([file[*page as usize * 8192 + 22], file[*page as usize * 8192 + 23]]);
        assert_eq!(*count, slots, "rows read from 1:{page} = its header's slot count");
    }

    let (&page, &count) = per_page.iter().next().unwrap();
    let only = mdfkit(&[
        "cat",
        pubs,
        "authors",
        "--columns",
        "au_id",
        "--where-page",
        &format!("1:{page}"),
        "--format",
        "csv",
    ]);
    let only = text(&only.stdout);
    let expected: Vec<&str> = rows.iter().filter(|r| r.1 == page).map(|r| r.0.as_str()).collect();
    assert_eq!(only.lines().skip(1).collect::<Vec<_>>(), expected);
    assert_eq!(expected.len(), usize::from(count));
    let none = mdfkit(&["cat", pubs, "authors", "--where-page", "7:0-100", "--format", "csv"]);
    assert_eq!(text(&none.stdout).lines().count(), 1, "header only: file 7 holds no rows");

    let bad = mdfkit(&["cat", pubs, "authors", "--where-page", "1:20-10"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("the first page comes after the last"), "{}", text(&bad.stderr));
}

#[test]
fn export_writes_one_file_per_table_with_a_summary() {
    let Some(dir) = corpus() else { return };
    let out = std::env::temp_dir().join(format!("mdfkit-cli-export-{}", std::process::id()));
    let db = dir.join("big/jdhj-edx__adventureworkslt2012_data.mdf");
    let run = mdfkit(&["export", db.to_str().unwrap(), "--all", "--format", "jsonl", "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let lines = std::fs::read_to_string(out.join("SalesLT.Customer.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 847);
    assert!(text(&run.stderr).contains("exported 12 of 12 tables"), "{}", text(&run.stderr));
    std::fs::remove_dir_all(out).ok();
}

#[test]
fn export_compression_is_chosen_by_name_and_a_wrong_name_is_refused() {
    let Some(dir) = corpus() else { return };
    let pubs = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let out = std::env::temp_dir().join(format!("mdfkit-cli-compression-{}", std::process::id()));
    let mut sizes = Vec::new();
    for codec in ["none", "snappy", "zstd:19"] {
        let target = out.join(codec.replace(':', "-"));
        let args = ["export", pubs.to_str().unwrap(), "--table", "titles", "--compression", codec, "-o"];
        let run = mdfkit(&[&args[..], &[target.to_str().unwrap()]].concat());
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        sizes.push(std::fs::metadata(target.join("dbo.titles.parquet")).unwrap().len());
    }
    assert!(sizes[0] > sizes[1] && sizes[1] > sizes[2], "none > snappy > zstd:19: {sizes:?}");
    let run =
        mdfkit(&["export", pubs.to_str().unwrap(), "--all", "--compression", "gzip", "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run.stderr).contains("use zstd, zstd:LEVEL (1-22), snappy, lz4 or none"), "{}", text(&run.stderr));
    std::fs::remove_dir_all(out).ok();
}

#[test]
fn every_command_has_help_with_an_example() {
    for command in ["backups", "info", "tables", "schema", "sys", "cat", "export"] {
        let help = mdfkit(&[command, "--help"]);
        assert_eq!(help.status.code(), Some(0));
        assert!(text(&help.stdout).contains("mdfkit "), "{command} --help has no example");
    }
}

#[test]
fn check_exits_0_on_a_clean_file_and_1_naming_a_damaged_page() {
    let Some(dir) = corpus() else { return };
    let clean = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let run = mdfkit(&["check", clean.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let mut bytes = std::fs::read(&clean).unwrap();
    bytes[100 * 8192 + 500] ^= 0xff;
    let damaged = std::env::temp_dir().join(format!("mdfkit-check-{}.mdf", std::process::id()));
    std::fs::write(&damaged, bytes).unwrap();
    let run = mdfkit(&["check", damaged.to_str().unwrap(), "--format", "csv"]);
    std::fs::remove_file(&damaged).ok();
    assert_eq!(run.status.code(), Some(1));
    assert!(text(&run.stdout).contains("1:100,,\"checksum mismatch"), "{}", text(&run.stdout));
}

#[test]
fn backups_lists_every_set_and_position_reads_one() {
    let Some(dir) = corpus() else { return };
    let bak = dir.join("bak/dataplat-appveyor-lab__sharepoint_config.bak");
    let bak = bak.to_str().unwrap();
    let list = mdfkit(&["backups", bak, "--format", "csv"]);
    assert_eq!(list.status.code(), Some(0), "{}", text(&list.stderr));
    let out = text(&list.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("position,type,database,start,finish,size,first_lsn,last_lsn"), "{out}");
    assert!(lines[1].starts_with("1,full,SharePoint_Config,2018-10-06 23:16:42,"), "{out}");
    assert!(lines[2].starts_with("2,full,SharePoint_Config,2018-10-06 23:16:47,"), "{out}");
    let json = mdfkit(&["backups", bak, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v[1]["position"], 2);
    assert_eq!(v[1]["database_backup_lsn"], v[0]["checkpoint_lsn"]);

    for position in ["1", "2"] {
        let run = mdfkit(&["tables", bak, "--position", position, "--format", "csv"]);
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        assert!(text(&run.stdout).contains("dbo.Classes,"));
        let info = mdfkit(&["info", "--position", position, bak]);
        assert!(
            text(&info.stdout).contains(&format!("backup position:         {position}\n")),
            "{}",
            text(&info.stdout)
        );
    }
    let none = mdfkit(&["tables", bak, "--position", "3"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(text(&none.stderr).contains("no backup set at position 3"), "{}", text(&none.stderr));
}

/// chains/EXPECTED.json's simplerecovery case through the CLI: the full backup and its
/// differential, given in either order, hold dbo.steps from min_dt to max_dt; `backups --plan`
/// names the sets used and skipped; the notice on stderr says which are read.
#[test]
fn a_full_backup_and_its_differential_read_together() {
    let Some(dir) = corpus() else { return };
    let folder = dir.join("chains/simplerecovery");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let case = expected["chains"].as_array().unwrap().iter().find(|c| c["folder"] == "simplerecovery").unwrap();
    let (full, diff) = (folder.join("SimpleBacktest.bak"), folder.join("SimpleBackTest_1.bak"));
    let (full, diff) = (full.to_str().unwrap(), diff.to_str().unwrap());
    let mut rows = 0;
    for pair in [[full, diff], [diff, full]] {
        let run = mdfkit(&["cat", pair[0], pair[1], "dbo.steps", "--format", "csv"]);
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        let dts = step_times(&run);
        rows = dts.len();
        assert_eq!(dts.first().map(String::as_str), case["min_dt"].as_str());
        assert_eq!(dts.last().map(String::as_str), case["max_dt"].as_str());
        let notice = text(&run.stderr);
        assert!(
            notice.contains("note: with the differential backup") && notice.contains("SimpleBackTest_1.bak"),
            "{notice}"
        );
    }
    let tables = mdfkit(&["tables", full, diff, "--format", "csv"]);
    // The catalog's row count of the restored database agrees with the rows `cat` returned.
    assert!(text(&tables.stdout).contains(&format!(",heap,1,{rows},")), "{}", text(&tables.stdout));
    let plan = mdfkit(&[
        "backups",
        "--plan",
        "--format",
        "csv",
        full,
        diff,
        folder.join("SimpleBackTest_2.bak").to_str().unwrap(),
    ]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
    let out = text(&plan.stdout);
    let roles: Vec<&str> = out.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(roles, ["full", "differential", "skipped"], "{out}");
    assert!(out.lines().nth(2).unwrap().contains("SimpleBackTest_2.bak"), "{out}");
    // A differential of another database is refused by name.
    let other = dir.join("chains/difftest/difftest-diff1.bak");
    let run = mdfkit(&["tables", full, other.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(text(&run.stderr).contains("is a backup of database \"doublediff\""), "{}", text(&run.stderr));
}

/// RestoreTimeClean: `backups --plan` over the whole folder takes the full, the differential and
/// the three logs after it (EXPECTED.json: 5 files), the logs rolled forward; `cat` of the folder
/// reads EXPECTED.json's min and max of dbo.steps.dt, and with `--stopat` those of the STOPAT
/// restore; `tables` lists as many rows.
#[test]
fn the_restore_plan_lists_the_logs_after_the_differential() {
    let Some(dir) = corpus() else { return };
    let folder = dir.join("chains/restoretimeclean");
    let mut files: Vec<String> =
        std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path().to_str().unwrap().to_string()).collect();
    files.sort();
    let mut args = vec!["backups", "--plan", "--format", "csv"];
    args.extend(files.iter().map(String::as_str));
    let run = mdfkit(&args);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let out = text(&run.stdout);
    let used: Vec<&str> = out.lines().skip(1).filter(|l| !l.starts_with("skipped,")).collect();
    assert_eq!(used.len(), 5, "{out}");
    assert!(used[1].starts_with("differential,") && used[1].contains("RestoreTimeClean2.bak,"), "{out}");
    for (line, log) in
        used[2..].iter().zip(["RestoreTimeClean2_1.trn", "RestoreTimeClean2_2.trn", "RestoreTimeClean2_3.trn"])
    {
        assert!(line.starts_with("log,") && line.contains(log) && line.contains("rolled forward"), "{out}");
    }
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let cases: Vec<&serde_json::Value> =
        expected["chains"].as_array().unwrap().iter().filter(|c| c["folder"] == "restoretimeclean").collect();
    assert_eq!(cases.len(), 2);
    for case in cases {
        let mut args = vec!["cat", "--format", "csv"];
        args.extend(files.iter().map(String::as_str));
        args.push("dbo.steps");
        if let Some(stop) = case["stopat"].as_str() {
            args.extend(["--stopat", stop]);
        }
        let run = mdfkit(&args);
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        let dts = step_times(&run);
        assert_eq!(dts.first().map(String::as_str), case["min_dt"].as_str(), "{case}");
        assert_eq!(dts.last().map(String::as_str), case["max_dt"].as_str(), "{case}");
        // `tables` counts those rows (the catalog's own count is the differential's checkpoint's).
        args[0] = "tables";
        args.retain(|a| *a != "dbo.steps");
        let run = mdfkit(&args);
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        let out = text(&run.stdout);
        let steps = out.lines().find(|l| l.starts_with("dbo.steps,")).unwrap_or_else(|| panic!("{out}"));
        assert_eq!(steps.split(',').nth(5), Some(dts.len().to_string().as_str()), "{case}: {out}");
    }
    let bad = mdfkit(&["cat", &files[0], "dbo.steps", "--stopat", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("stopat"), "{}", text(&bad.stderr));
    let bad = mdfkit(&["cat", &files[0], "dbo.steps", "--stopatlsn", "19:51"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("stopatlsn \"19:51\": expected an LSN"), "{}", text(&bad.stderr));
    // No such mark in the log: refused by name.
    let mut args = vec!["cat"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["dbo.steps", "--stopatmark", "nosuchmark"]);
    let run = mdfkit(&args);
    assert_ne!(run.status.code(), Some(0));
    assert!(text(&run.stderr).contains("no mark \"nosuchmark\""), "{}", text(&run.stderr));
}

/// The StopAt chain (its log creates dbo.steps' first page): `cat` with EXPECTED.json's three
/// mark stop points gives each one's max_step; the step is the csv's first column.
#[test]
fn cat_of_the_stopat_chain_stops_at_its_marks() {
    let Some(dir) = corpus() else { return };
    let mut files = Vec::new();
    for folder in ["chains/stopat", "chains/stopat-later-logs"] {
        for e in std::fs::read_dir(dir.join(folder)).unwrap() {
            files.push(e.unwrap().path().to_str().unwrap().to_string());
        }
    }
    files.sort();
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let case = expected["chains"].as_array().unwrap().iter().find(|c| c["database"] == "StopAt").unwrap();
    for (options, key) in [
        (&["--stopatmark", "dbatoolstest"][..], "STOPATMARK 'dbatoolstest'"),
        (&["--stopbeforemark", "dbatoolstest"][..], "STOPBEFOREMARK 'dbatoolstest'"),
        (
            &["--stopatmark", "dbatoolstest", "--after", "2020-05-12 13:33:35"][..],
            "STOPATMARK 'dbatoolstest' AFTER '2020-05-12 13:33:35'",
        ),
    ] {
        let run = cat_steps(&files, options);
        let max = text(&run.stdout).lines().skip(1).filter_map(|l| l.split(',').next()?.parse::<i64>().ok()).max();
        assert_eq!(max, case["expect"][key]["max_step"].as_i64(), "{key}");
    }
}

/// `--stopatlsn` at the commit of the last transaction committed by EXPECTED.json's STOPAT time
/// (found with `mdfkit log`) reads that restore's min and max of dbo.steps.dt, in the three
/// spellings of an LSN; `--stopbeforemark lsn:` at it leaves that transaction out, and an LSN
/// past the log reads the whole chain.
#[test]
fn a_stop_lsn_reads_as_the_stop_time_of_its_commit() {
    let Some(dir) = corpus() else { return };
    let folder = dir.join("chains/restoretimeclean");
    let mut files: Vec<String> =
        std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path().to_str().unwrap().to_string()).collect();
    files.sort();
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let chains = expected["chains"].as_array().unwrap();
    let case = chains.iter().find(|c| c["folder"] == "restoretimeclean" && c["stopat"].is_string()).unwrap();
    let whole = chains.iter().find(|c| c["folder"] == "restoretimeclean" && c["stopat"].is_null()).unwrap();
    let stopat = case["stopat"].as_str().unwrap();
    let mut args = vec!["log", "--operation", "LOP_COMMIT_XACT", "--format", "csv"];
    args.extend(files.iter().map(String::as_str));
    let log = text(&mdfkit(&args).stdout);
    let header: Vec<&str> = log.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (lsn_at, end_at) = (column("current_lsn"), column("end_time"));
    let commit = log
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<&str>>())
        .filter(|f| f[end_at].get(..19).is_some_and(|t| t <= stopat))
        .map(|f| f[lsn_at].to_string())
        .max()
        .unwrap();
    let parts: Vec<u64> = commit.split(':').map(|p| u64::from_str_radix(p, 16).unwrap()).collect();
    let decimal = format!("{}{:010}{:05}", parts[0], parts[1], parts[2]);
    let short = format!("{}:{}:{}", parts[0], parts[1], parts[2]);
    let dts = |stop: &[&str]| -> (String, String) {
        let run = cat_steps(&files, stop);
        let dts = step_times(&run);
        (dts.first().cloned().unwrap(), dts.last().cloned().unwrap())
    };
    let want = (case["min_dt"].as_str().unwrap().to_string(), case["max_dt"].as_str().unwrap().to_string());
    for lsn in [decimal.as_str(), &format!("0x{commit}"), &short, &commit] {
        assert_eq!(dts(&["--stopatlsn", lsn]), want, "--stopatlsn {lsn}");
    }
    assert_eq!(dts(&["--stopatmark", &format!("lsn:{decimal}")]), want);
    let before = dts(&["--stopbeforemark", &format!("lsn:{decimal}")]);
    assert!(before.0 == want.0 && before.1 < want.1, "{before:?}");
    let end = (whole["min_dt"].as_str().unwrap().to_string(), whole["max_dt"].as_str().unwrap().to_string());
    assert_eq!(dts(&["--stopatlsn", "99000000000100001"]), end);
}

/// A chain whose last log backup has a slot entry pointing outside its first block:
/// `cat` fails with exit 2 naming the file, the block's byte offset and `--salvage`; `cat
/// --salvage` reads up to the last good LSN and says so; with `--stopat` (EXPECTED.json's
/// STOPAT restore, whose stop comes before the damaged block) both read that restore.
#[test]
fn a_damaged_log_backup_is_named_and_salvage_reads_up_to_it() {
    let Some(dir) = corpus() else { return };
    let scratch = std::env::temp_dir().join(format!("mdfkit-cli-damaged-chain-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir.join("chains/restoretimeclean")).unwrap() {
        let path = e.unwrap().path();
        let copy = scratch.join(path.file_name().unwrap());
        std::fs::copy(&path, &copy).unwrap();
        files.push(copy.to_str().unwrap().to_string());
    }
    files.sort();
    let damaged = scratch.join("RestoreTimeClean2_3.trn");
    let mut bytes = std::fs::read(&damaged).unwrap();
    let piece = mdfkit::backup::BackupMedia::open(&[&damaged]).unwrap().log_pieces(1)[0];
    let first = piece.offset as usize;
    // Slot 1's entry (just below the slot array's entry 0, whose offset is at block +4) made to
    // point past the block.
    let array = first + usize::from(u16::from_le_bytes([bytes[first + 4], bytes[first + 5]]));
    bytes[array - 2..array].copy_from_slice(&0xfff0u16.to_le_bytes());
    std::fs::write(&damaged, bytes).unwrap();
    let cat = |extra: &[&str]| {
        let mut args = vec!["cat", "--format", "csv"];
        args.extend(files.iter().map(String::as_str));
        args.push("dbo.steps");
        args.extend(extra);
        mdfkit(&args)
    };
    let run = cat(&[]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run.stderr));
    let message = text(&run.stderr);
    assert!(
        message.contains(damaged.to_str().unwrap())
            && message.contains(&format!("log block at byte {first} of the file"))
            && message.contains("--salvage"),
        "{message}"
    );
    let run = cat(&["--salvage"]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("rolled forward up to there only"), "{}", text(&run.stderr));
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let chains = expected["chains"].as_array().unwrap();
    let case = chains.iter().find(|c| c["folder"] == "restoretimeclean" && c["stopat"].is_string()).unwrap();
    for salvage in [&["--salvage"][..], &[]] {
        let mut args = vec!["--stopat", case["stopat"].as_str().unwrap()];
        args.extend(salvage);
        let run = cat(&args);
        assert_eq!(run.status.code(), Some(0), "{args:?}: {}", text(&run.stderr));
        assert!(!text(&run.stderr).contains("warning"), "{args:?}: {}", text(&run.stderr));
        let dts = step_times(&run);
        assert_eq!(dts.first().map(String::as_str), case["min_dt"].as_str(), "{args:?}");
        assert_eq!(dts.last().map(String::as_str), case["max_dt"].as_str(), "{args:?}");
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// One stripe of two with `--salvage`: chinook.bak's catalog has pages in the missing stripe, and
/// the error says so instead of the plain refusal.
#[test]
fn salvage_of_one_stripe_names_what_of_the_catalog_is_missing() {
    let Some(dir) = corpus() else { return };
    let chinook = dir.join("bak/mariamahmed08080-chinook_analysis__chinook.bak");
    let chinook = chinook.to_str().unwrap();
    let plain = mdfkit(&["cat", chinook, "dbo.Album"]);
    assert!(text(&plain.stderr).contains("stripe 2 is missing"), "{}", text(&plain.stderr));
    let run = mdfkit(&["cat", chinook, "dbo.Album", "--salvage"]);
    assert_eq!(run.status.code(), Some(2));
    let message = text(&run.stderr);
    assert!(
        message.contains("the catalog is incomplete, nothing can be read")
            && message.contains("stripe(s) 2 of 2 not given"),
        "{message}"
    );
}

#[test]
fn differential_backups_show_their_header_and_are_refused_by_name() {
    let Some(dir) = corpus() else { return };
    let diff = dir.join("chains/difftest/difftest-diff1.bak");
    let run = mdfkit(&["info", diff.to_str().unwrap()]);
    // A file the database needs (its full backup) was not given: exit code 1, like a missing stripe.
    assert_eq!(run.status.code(), Some(1));
    let out = text(&run.stdout).split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ");
    assert!(out.contains("backup type: differential"), "{out}");
    assert!(out.contains("differential base lsn: 24000000006800099"), "{out}");
    assert!(out.contains("doublediff_log"), "{out}");
    assert!(
        text(&run.stderr).contains(
            "difftest-diff1.bak: position 1 is a differential backup: it holds only the extents changed since its full backup (checkpoint LSN 24000000006800099"
        ),
        "{}",
        text(&run.stderr)
    );
    let stripe = dir.join("chains/stripe/RestoreTimeStripe1.bak");
    let run = mdfkit(&["backups", stripe.to_str().unwrap(), "--format", "csv"]);
    assert!(text(&run.stdout).contains(",2 of 2\n"), "{}", text(&run.stdout));
    assert!(text(&run.stderr).contains("stripe(s) 1 not given"), "{}", text(&run.stderr));
}

#[test]
fn export_salvage_writes_the_undamaged_rows_and_a_report() {
    let Some(dir) = corpus() else { return };
    let mut bytes = std::fs::read(dir.join("mdf/itsligo-sampledbs__pubs.mdf")).unwrap();
    // Page 1:194 (0xC2) is dbo.roysched's only data page (sysallocunits first page; a heap).
    bytes[194 * 8192 + 3000] ^= 0x5a;
    let tmp = std::env::temp_dir().join(format!("mdfkit-salvage-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let damaged = tmp.join("pubs.mdf");
    std::fs::write(&damaged, bytes).unwrap();
    let out = tmp.join("out");
    let args =
        ["export", damaged.to_str().unwrap(), "--table", "roysched", "--format", "csv", "-o", out.to_str().unwrap()];
    let plain = mdfkit(&args);
    assert_eq!(plain.status.code(), Some(2), "{}", text(&plain.stderr));
    assert!(text(&plain.stderr).contains("page 1:194"), "{}", text(&plain.stderr));
    let mut salvage = args.to_vec();
    salvage.push("--salvage");
    let run = mdfkit(&salvage);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let report = std::fs::read_to_string(out.join("dbo.roysched.csv.skipped.csv")).unwrap();
    assert!(report.starts_with("table,page,slot,reason\ndbo.roysched,1:194,,\"checksum mismatch"), "{report}");
    let rows = std::fs::read_to_string(out.join("dbo.roysched.csv")).unwrap();
    assert_eq!(rows.lines().count(), 1, "only the header: the one data page was damaged");
    std::fs::remove_dir_all(tmp).ok();
}

#[test]
fn pages_and_decode_recover_a_table_without_its_catalog_entry() {
    let Some(dir) = corpus() else { return };
    let pubs = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let pubs = pubs.to_str().unwrap();
    // dbo.discounts (object 373576369): its data page names its allocation unit.
    let pages = mdfkit(&["pages", pubs, "--object-id", "373576369", "--type", "data", "--format", "csv"]);
    assert_eq!(pages.status.code(), Some(0), "{}", text(&pages.stderr));
    let listing = text(&pages.stdout);
    let unit = listing.lines().nth(1).unwrap().split(',').nth(3).unwrap().to_string();
    let columns =
        "discounttype varchar(40), stor_id char(4) null, lowqty smallint, highqty smallint, discount decimal(4,2)";
    let run = mdfkit(&["decode", pubs, "--allocation-unit", &unit, "--columns", columns, "--format", "csv"]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    // instpubs.sql inserts these three rows.
    assert_eq!(
        text(&run.stdout),
        "discounttype,stor_id,lowqty,highqty,discount\nInitial Customer,,,,10.50\nVolume Discount,,100,1000,6.70\nCustomer Discount,8042,,,5.00\n"
    );
}

#[test]
fn demo_builds_the_sample_database_and_the_other_commands_read_it() {
    let dir = std::env::temp_dir().join(format!("mdfkit-demo-test-{}", std::process::id()));
    let out = mdfkit(&["demo", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("SQL Server 2019 (904)"), "{stdout}");
    assert!(stdout.contains("CREATE TABLE [dbo].[Orders]"), "{stdout}");
    assert!(dir.join("export/dbo.Orders.parquet").exists());
    // The readings table three times: the compressed copies read the plain one's 20,000 rows.
    for name in ["sales.ReadingsRow", "sales.ReadingsPage"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(name) && l.contains("% of the pages"))
            .unwrap_or_else(|| panic!("{name}: {stdout}"));
        assert!(line.contains(" 20000 rows") && line.contains("the same rows"), "{line}");
    }
    let mdf = dir.join("shop.mdf");
    let check = mdfkit(&["check", mdf.to_str().unwrap()]);
    assert!(check.status.success(), "{}{}", text(&check.stdout), text(&check.stderr));
    let cat = mdfkit(&["cat", mdf.to_str().unwrap(), "dbo.Customers", "--limit", "3", "--format", "csv"]);
    assert!(cat.status.success(), "{}", text(&cat.stderr));
    assert_eq!(text(&cat.stdout).lines().count(), 4);
    // sales.EventLog's datetime2(7) values span every year: refused in exact nanoseconds (naming
    // the option), written in microseconds.
    let export = |extra: &[&str]| {
        let mut args = vec!["export", mdf.to_str().unwrap(), "--table", "sales.EventLog", "-o"];
        args.push(dir.to_str().unwrap());
        args.extend(extra);
        mdfkit(&args)
    };
    let parquet = dir.join("sales.EventLog.parquet");
    let refused = export(&[]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    assert!(text(&refused.stderr).contains("--timestamps us"), "{}", text(&refused.stderr));
    assert!(!parquet.exists());
    let written = export(&["--timestamps", "us"]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    assert!(parquet.exists());
    // Every live row, as many as `cat` prints (its CSV less the header line); the report is on stderr.
    let all = mdfkit(&["cat", mdf.to_str().unwrap(), "sales.EventLog", "--format", "csv"]);
    let rows = text(&all.stdout).lines().count() - 1;
    assert!(text(&written.stderr).contains(&format!(" {rows} rows ")), "{}", text(&written.stderr));
    std::fs::remove_dir_all(&dir).ok();
}

/// `share` for CloudFront: the link carries the policy asked for, and openssl verifies its
/// signature with the key pair's public key (a key made here by openssl, PKCS#8 PEM).
#[test]
fn share_signs_cloudfront_links_that_openssl_verifies() {
    let openssl = |args: &[&str], input: Option<&[u8]>| -> Output {
        let mut child = Command::new("openssl")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run openssl");
        if let Some(input) = input {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input).unwrap();
        }
        child.wait_with_output().unwrap()
    };
    if Command::new("openssl").arg("version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "openssl is needed to check CloudFront signatures under CI");
        eprintln!("\n*** SKIPPED: openssl not found: CloudFront links not checked ***\n");
        return;
    }
    let dir = std::env::temp_dir().join(format!("mdfkit-cloudfront-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (key, public) = (dir.join("key.pem"), dir.join("public.pem"));
    assert!(openssl(&["genrsa", "-out", key.to_str().unwrap(), "2048"], None).status.success());
    assert!(openssl(&["rsa", "-in", key.to_str().unwrap(), "-pubout", "-out", public.to_str().unwrap()], None)
        .status
        .success());
    let object = "https://d111111abcdef8.cloudfront.net/exports/a.parquet";
    let pattern = "https://d111111abcdef8.cloudfront.net/exports/*";
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let out = mdfkit(&[
        "share",
        object,
        "--expires",
        "2h",
        "--ip",
        "203.0.113.0/24",
        "--start",
        "2030-01-01T00:00:00Z",
        "--resource",
        pattern,
        "--cloudfront-key-pair-id",
        "K2JCJMDEHXQW5F",
        "--cloudfront-private-key",
        key.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let link = text(&out.stdout).trim().to_string();
    let query = link.strip_prefix(&format!("{object}?")).expect("the object's URL with a query");
    let params: Vec<(&str, &str)> = query.split('&').map(|p| p.split_once('=').unwrap()).collect();
    assert_eq!(params.iter().map(|(k, _)| *k).collect::<Vec<_>>(), ["Policy", "Signature", "Key-Pair-Id"]);
    assert_eq!(params[2].1, "K2JCJMDEHXQW5F");
    let decode = |s: &str| {
        let standard = s.replace('-', "+").replace('_', "=").replace('~', "/");
        let out = openssl(&["base64", "-d", "-A"], Some(standard.as_bytes()));
        assert!(out.status.success());
        out.stdout
    };
    let policy = decode(params[0].1);
    let json: serde_json::Value = serde_json::from_slice(&policy).expect("the policy is JSON");
    let statement = &json["Statement"][0];
    assert_eq!(statement["Resource"], pattern);
    let condition = &statement["Condition"];
    assert_eq!(condition["IpAddress"]["AWS:SourceIp"], "203.0.113.0/24");
    assert_eq!(condition["DateGreaterThan"]["AWS:EpochTime"], 1_893_456_000);
    let expiry = condition["DateLessThan"]["AWS:EpochTime"].as_u64().unwrap();
    assert!((now + 7200..now + 7260).contains(&expiry), "expires at {expiry}, asked for {now} + 2 h");
    assert!(!policy.iter().any(|b| b.is_ascii_whitespace()), "CloudFront policies carry no white space");
    let (policy_file, signature_file) = (dir.join("policy.json"), dir.join("signature.bin"));
    std::fs::write(&policy_file, &policy).unwrap();
    std::fs::write(&signature_file, decode(params[1].1)).unwrap();
    let verify = openssl(
        &[
            "dgst",
            "-sha1",
            "-verify",
            public.to_str().unwrap(),
            "-signature",
            signature_file.to_str().unwrap(),
            policy_file.to_str().unwrap(),
        ],
        None,
    );
    assert!(verify.status.success(), "openssl: {}{}", text(&verify.stdout), text(&verify.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
    // Without the key pair an https URL is refused with what to give.
    let out = mdfkit(&["share", object, "--expires", "1h"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--cloudfront-key-pair-id"), "{}", text(&out.stderr));
}

/// A full backup (forged) whose dbo.Beta has one allocated page with a garbled header: `check`
/// names the page and exits 1; `export --all` writes the other tables whole and refuses dbo.Beta
/// by its page; `export --salvage` writes every row of Beta's other pages and says what it skipped.
#[test]
fn a_backup_with_a_damaged_page_exports_every_other_table_and_salvages_the_rest() {
    use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
    let key = || ColumnSpec::new("id", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let label =
        || ColumnSpec::new("label", ColType::VarChar(Some(100)), Gen::Length { min: 40, max: 100 }, Nulls::Never);
    let spec = Spec::new("damaged", Version::V904, 11)
        .table(TableSpec::new("dbo", "Alpha", Layout::Clustered { key: 0 }, 300).column(key()).column(label()))
        .table(TableSpec::new("dbo", "Beta", Layout::Clustered { key: 0 }, 3000).column(key()).column(label()))
        .table(TableSpec::new("dbo", "Gamma", Layout::Heap, 200).column(key()).column(label()));
    let mut files = mdfkit_forge::forge(&spec).unwrap();
    let tmp = std::env::temp_dir().join(format!("mdfkit-bakdamage-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // Beta's pages, from `cat --with-location` over the clean backup.
    let clean = tmp.join("clean.bak");
    std::fs::write(&clean, mdfkit_forge::backup::full_backup(&files)).unwrap();
    let run = mdfkit(&["cat", clean.to_str().unwrap(), "dbo.Beta", "--with-location", "--format", "csv"]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let listing = text(&run.stdout);
    let header: Vec<&str> = listing.lines().next().unwrap().split(',').collect();
    let page_col = header.iter().position(|h| *h == "__page").unwrap_or_else(|| panic!("{header:?}"));
    let mut pages: Vec<String> =
        listing.lines().skip(1).map(|l| l.split(',').nth(page_col).unwrap().to_string()).collect();
    pages.dedup();
    assert!(pages.len() >= 10, "{}", pages.len());
    let damaged = pages[pages.len() / 2].clone();
    let rows_on_damaged =
        listing.lines().skip(1).filter(|l| l.split(',').nth(page_col) == Some(damaged.as_str())).count();
    let page_no: usize = damaged.trim_matches('"').split(':').nth(1).unwrap().parse().unwrap();
    let page = &mut files[0].bytes[page_no * 8192..(page_no + 1) * 8192];
    page[32..36].copy_from_slice(&4_264_431_066u32.to_le_bytes());
    page[36..38].copy_from_slice(&37_950u16.to_le_bytes());
    mdfkit_forge::page::seal(page);
    let bak = tmp.join("damaged.bak");
    std::fs::write(&bak, mdfkit_forge::backup::full_backup(&files)).unwrap();

    let run = mdfkit(&["check", bak.to_str().unwrap(), "--format", "csv"]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    assert!(
        text(&run.stdout).contains(&format!("1:{page_no},,page header says it is page 37950:4264431066")),
        "{}",
        text(&run.stdout)
    );

    let out = tmp.join("out");
    let args = ["export", bak.to_str().unwrap(), "--all", "--format", "csv", "-o", out.to_str().unwrap()];
    let plain = mdfkit(&args);
    assert_eq!(plain.status.code(), Some(2), "{}", text(&plain.stderr));
    assert!(text(&plain.stderr).contains(&format!("page 1:{page_no}")), "{}", text(&plain.stderr));
    let lines = |name: &str| std::fs::read_to_string(out.join(name)).map(|s| s.lines().count()).unwrap_or(0);
    assert_eq!(lines("dbo.Alpha.csv"), 301);
    assert_eq!(lines("dbo.Gamma.csv"), 201);
    assert!(!out.join("dbo.Beta.csv").exists(), "a failed table leaves no file");

    let mut salvage = args.to_vec();
    salvage.push("--salvage");
    let run = mdfkit(&salvage);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("1 damaged pages or records skipped"), "{}", text(&run.stderr));
    assert_eq!(lines("dbo.Beta.csv"), 3001 - rows_on_damaged);
    let report = std::fs::read_to_string(out.join("dbo.Beta.csv.skipped.csv")).unwrap();
    assert!(report.contains(&format!("dbo.Beta,1:{page_no},")), "{report}");
    std::fs::remove_dir_all(tmp).ok();
}

/// `(vlf, block, slot)` of an LSN as `mdfkit log` prints it (`00000019:00000099:0001`), or of
/// the decimal form `mdfkit backups` prints (`25000000017300001`).
fn lsn_parts(lsn: &str) -> (u64, u64, u64) {
    if let Some((vlf, rest)) = lsn.split_once(':') {
        let (block, slot) = rest.split_once(':').unwrap();
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        return (hex(vlf), hex(block), hex(slot));
    }
    let n: u128 = lsn.parse().unwrap();
    ((n / 1_000_000_000_000_000) as u64, ((n / 100_000) % 10_000_000_000) as u64, (n % 100_000) as u64)
}

/// The header fields `mdfkit backups --format json` gives for one file.
fn backup_header(file: &str) -> serde_json::Value {
    let out = mdfkit(&["backups", file, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()[0].clone()
}

fn log_rows(args: &[&str]) -> Vec<serde_json::Value> {
    let out = mdfkit(&[&["log"], args, &["--format", "jsonl"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `mdfkit log` over the RestoreTimeClean full backup and its first three log backups: each
/// record once, in LSN order, none at or past the last log backup's last LSN (its header), and
/// the inserts into dbo.steps named by the full backup's catalog.
#[test]
fn log_lists_a_chain_once_in_lsn_order_with_tables_named() {
    let Some(dir) = corpus() else { return };
    let folder = dir.join("chains/restoretimeclean");
    let files: Vec<String> =
        ["RestoreTimeClean.bak", "RestoreTimeClean_3.trn", "RestoreTimeClean_1.trn", "RestoreTimeClean_2.trn"]
            .iter()
            .map(|f| folder.join(f).to_str().unwrap().to_string())
            .collect();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let rows = log_rows(&args);
    let lsns: Vec<(u64, u64, u64)> = rows.iter().map(|r| lsn_parts(r["current_lsn"].as_str().unwrap())).collect();
    assert!(lsns.len() > 100, "{} records", lsns.len());
    assert!(lsns.windows(2).all(|w| w[0] < w[1]), "LSNs not strictly rising");
    let last = lsn_parts(backup_header(&files[1])["last_lsn"].as_str().unwrap());
    assert!(*lsns.last().unwrap() < last);
    let inserts: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["operation"] == "LOP_INSERT_ROWS" && r["object"] == "dbo.steps").collect();
    assert!(!inserts.is_empty());
    assert!(inserts.iter().all(|r| r["context"] == "LCX_HEAP" && r["page_id"].as_str().unwrap().starts_with("0001:")));
    // --table keeps those records only.
    let only = log_rows(&[&args[..], &["--table", "dbo.steps"]].concat());
    assert!(!only.is_empty() && only.iter().all(|r| r["object"] == "dbo.steps"));
    assert_eq!(only.iter().filter(|r| r["operation"] == "LOP_INSERT_ROWS").count(), inserts.len());
    // Without a full backup there is no catalog to name a table by.
    let out = mdfkit(&["log", &files[2], "--table", "dbo.steps"]);
    assert!(!out.status.success() && text(&out.stderr).contains("give a full backup"), "{}", text(&out.stderr));
}

/// The marked transaction of the StopAt chain: `mdfkit log` names `dbatoolstest` on its
/// LOP_BEGIN_XACT, which began between the previous log backup's finish and StopAt_21's finish
/// (their headers); `--from` / `--to` keep only transactions that began in that window.
#[test]
fn log_shows_the_marked_transaction_and_filters_by_time() {
    let Some(dir) = corpus() else { return };
    let previous = dir.join("chains/stopat/StopAt_2.trn");
    let marked = dir.join("chains/stopat-later-logs/StopAt_21.trn");
    let (previous, marked) = (previous.to_str().unwrap(), marked.to_str().unwrap());
    let from = backup_header(previous)["finish"].as_str().unwrap().to_string();
    let to = backup_header(marked)["finish"].as_str().unwrap().to_string();
    let begins = log_rows(&[marked, "--operation", "LOP_BEGIN_XACT"]);
    assert!(begins.iter().all(|r| r["operation"] == "LOP_BEGIN_XACT"));
    let mark: Vec<&serde_json::Value> = begins.iter().filter(|r| r["transaction_name"] == "dbatoolstest").collect();
    assert_eq!(mark.len(), 1);
    let begin = mark[0]["begin_time"].as_str().unwrap();
    assert!(begin[..19] >= from[..19] && begin[..19] <= to[..19], "{begin} outside {from} .. {to}");
    // A window of one minute around the mark keeps fewer transactions, each begun inside it.
    let start = format!("{}:00", &begin[..16]);
    let end = format!("{}:59", &begin[..16]);
    let window = log_rows(&[marked, "--from", &start, "--to", &end]);
    let window_begins: Vec<&str> = window
        .iter()
        .filter(|r| r["operation"] == "LOP_BEGIN_XACT")
        .map(|r| r["begin_time"].as_str().unwrap())
        .collect();
    assert!(window_begins.contains(&begin));
    assert!(window_begins.iter().all(|t| *t >= start.as_str() && t[..19] <= end[..]));
    assert!(window_begins.len() < begins.len());
    let out = mdfkit(&["log", marked, "--from", "yesterday"]);
    assert!(!out.status.success() && text(&out.stderr).contains("YYYY-MM-DD"));
}

/// A transaction log file (a file header page not followed by a PFS page) is read as one: a
/// first VLF header of zeros is named by the file and its byte offset, and the exit status says
/// bad input.
#[test]
fn log_names_a_broken_vlf_chain_of_an_ldf() {
    let Some(dir) = corpus() else { return };
    let header_page = std::fs::read(dir.join("mdf/itsligo-sampledbs__pubs.mdf")).unwrap()[..8192].to_vec();
    let ldf = std::env::temp_dir().join(format!("mdfkit-cli-log-{}.ldf", std::process::id()));
    std::fs::write(&ldf, [header_page, vec![0u8; 8192 * 3]].concat()).unwrap();
    let out = mdfkit(&["log", ldf.to_str().unwrap()]);
    std::fs::remove_file(&ldf).unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(".ldf") && stderr.contains("transaction log, byte 8192"), "{stderr}");
    assert!(stderr.contains("says it is 0 bytes"), "{stderr}");
}

/// `mdfkit log` on a forged transaction log file (`.ldf`), with a full backup of its database
/// among the files (read for its catalog, the log file left to the log reader): the two named
/// transactions the forge logged, each begin and commit with its time, from the `.ldf`.
#[test]
fn log_lists_a_forged_ldf_beside_its_full_backup() {
    use mdfkit_forge::log::{LogTime, LogWriter};
    let spec = mdfkit_forge::Spec::new("tiny", mdfkit_forge::Version::V904, 3).table(
        mdfkit_forge::TableSpec::new("dbo", "T", mdfkit_forge::Layout::Heap, 10).column(mdfkit_forge::ColumnSpec::new(
            "a",
            mdfkit_forge::ColType::Int,
            mdfkit_forge::Gen::Random,
            mdfkit_forge::Nulls::Never,
        )),
    );
    let files = mdfkit_forge::forge(&spec).unwrap();
    let mut log = LogWriter::new(mdfkit_forge::page::FORGED_PAGE_LSN.vlf + 1, 16 * 1024);
    for (k, name) in ["first", "second"].iter().enumerate() {
        let at = |s: u32| LogTime { days: 45_000, ticks: 300 * (36_000 + 10 * k as u32 + s) };
        let t = log.begin(name, at(0));
        log.commit(t, at(1));
    }
    let log = log.finish();
    let dir = std::env::temp_dir().join(format!("mdfkit-cli-ldf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (bak, ldf) = (dir.join("tiny.bak"), dir.join("tiny_log.ldf"));
    std::fs::write(&bak, mdfkit_forge::backup::full_backup(&files)).unwrap();
    std::fs::write(&ldf, log.ldf(2, &[0], 1)).unwrap();
    let rows = log_rows(&[bak.to_str().unwrap(), ldf.to_str().unwrap()]);
    let commits = mdfkit(&["log", ldf.to_str().unwrap(), "--operation", "LOP_COMMIT_XACT", "--format", "csv"]);
    std::fs::remove_dir_all(&dir).unwrap();
    let listed: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["operation"].as_str().unwrap(), r["transaction_name"].as_str().unwrap())).collect();
    assert_eq!(
        listed,
        [
            ("LOP_BEGIN_XACT", "first"),
            ("LOP_COMMIT_XACT", "first"),
            ("LOP_BEGIN_XACT", "second"),
            ("LOP_COMMIT_XACT", "second")
        ]
    );
    // Day 45,000 after 1900-01-01, 36,000 s after midnight; the commit 1 s later.
    assert_eq!(rows[0]["begin_time"].as_str().unwrap(), "2023-03-17 10:00:00.000");
    assert_eq!(rows[1]["end_time"].as_str().unwrap(), "2023-03-17 10:00:01.000");
    assert!(rows.iter().all(|r| r["file"].as_str().unwrap().ends_with("tiny_log.ldf")));
    assert_eq!(text(&commits.stdout).lines().count(), 3, "a header and two commits");
}

/// `mdfkit log --changes dbo.steps` over the RestoreTimeClean chain: the table's own columns,
/// and the last row inserted is EXPECTED.json's max_dt of the whole chain's restore.
#[test]
fn log_changes_decodes_a_tables_rows() {
    let Some(dir) = corpus() else { return };
    let folder = dir.join("chains/restoretimeclean");
    let mut files: Vec<String> =
        std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path().to_str().unwrap().to_string()).collect();
    files.sort();
    let args: Vec<&str> = files.iter().map(String::as_str).collect();
    let rows = log_rows(&[&args[..], &["--changes", "dbo.steps"]].concat());
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let case = expected["chains"].as_array().unwrap().iter().find(|c| c["folder"] == "restoretimeclean").unwrap();
    let mut dts: Vec<String> = rows.iter().map(|r| r["dt"].as_str().unwrap()[..19].to_string()).collect();
    dts.sort();
    assert!(rows.iter().all(|r| r["change"] == "insert" && r["committed"] == 1 && r["step"].is_i64()));
    assert_eq!(dts.last().map(String::as_str), case["max_dt"].as_str());
    assert_eq!(dts.first().map(String::as_str), case["min_dt"].as_str());
}

/// A ROW compressed database (forged) reads through the commands as an uncompressed one does:
/// `cat` (data files and a backup of them), `export` as CSV and Parquet, `--include-ghosts`,
/// `--with-location`, `schema`; a CD record damaged in its CD array stops `cat` with its page and
/// slot, and `cat --salvage` returns every other row.
#[test]
fn row_compressed_tables_read_through_every_command() {
    use mdfkit_forge::{ColType, ColumnSpec, Compression, Gen, Layout, Nulls, Spec, TableSpec, Version};
    let col = |name: &str, ty, gen, nulls| ColumnSpec::new(name, ty, gen, nulls);
    let columns = |t: TableSpec| {
        t.column(col("qty", ColType::SmallInt, Gen::Random, Nulls::Every(5)))
            .column(col("price", ColType::Decimal(12, 2), Gen::Random, Nulls::Never))
            .column(col("done", ColType::Bit, Gen::Random, Nulls::Every(4)))
            .column(col(
                "city",
                ColType::NVarChar(Some(20)),
                Gen::Choice(vec!["Akron".into(), "Zürich".into(), "Köln".into(), "".into()]),
                Nulls::Every(3),
            ))
            .column(col("at", ColType::DateTime, Gen::Random, Nulls::Never))
    };
    let id = col("id", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never);
    let mut orders = columns(TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 400).column(id));
    orders.compression = Compression::Row;
    let mut log = columns(TableSpec::new("dbo", "Log", Layout::Heap, 300));
    log.compression = Compression::Row;
    log.ghost_every = Some(4);
    log.forward_every = Some(9);
    let spec = Spec::new("rowcomp", Version::V904, 3).table(orders).table(log);
    let tmp = std::env::temp_dir().join(format!("mdfkit-rowcomp-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut files = mdfkit_forge::forge(&spec).unwrap();
    let mdf = tmp.join("rowcomp.mdf");
    std::fs::write(&mdf, &files[0].bytes).unwrap();
    let bak = tmp.join("rowcomp.bak");
    std::fs::write(&bak, mdfkit_forge::backup::full_backup(&files)).unwrap();
    let (mdf_arg, bak_arg) = (mdf.to_str().unwrap(), bak.to_str().unwrap());

    // The forge's values, spelled as SQL Server prints them, in key order.
    let t = &spec.tables[0];
    let expected: Vec<String> = mdfkit_forge::live_rows(&spec, 0)
        .map(|row| {
            row.iter()
                .zip(&t.columns)
                .map(|(v, c)| v.as_ref().map_or(String::new(), |v| v.sql_text(c.ty)))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    let body = |out: &Output| -> Vec<String> {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout).lines().skip(1).map(|l| l.replace('"', "")).collect()
    };
    let from_mdf = body(&mdfkit(&["cat", mdf_arg, "dbo.Orders", "--format", "csv"]));
    assert_eq!(from_mdf.len(), 400);
    for (got, want) in from_mdf.iter().zip(&expected) {
        assert_eq!(got, want);
    }
    assert_eq!(body(&mdfkit(&["cat", bak_arg, "dbo.Orders", "--format", "csv"])), from_mdf, "the backup");

    let out = tmp.join("out");
    let run = mdfkit(&["export", mdf_arg, "--all", "--format", "csv", "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let exported = std::fs::read_to_string(out.join("dbo.Orders.csv")).unwrap();
    let exported: Vec<String> = exported.lines().skip(1).map(|l| l.replace('"', "")).collect();
    assert_eq!(exported, from_mdf);
    let run = mdfkit(&["export", mdf_arg, "--all", "--format", "parquet", "-o", out.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(out.join("dbo.Log.parquet").is_file());

    let schema = mdfkit(&["schema", mdf_arg, "dbo.Orders"]);
    assert!(text(&schema.stdout).contains(") WITH (DATA_COMPRESSION = ROW);"), "{}", text(&schema.stdout));

    // 300 live rows of the heap take 400 generated: every 4th is a ghost.
    let ghosts = mdfkit(&["cat", mdf_arg, "dbo.Log", "--format", "csv", "--include-ghosts"]);
    let listing = text(&ghosts.stdout);
    assert_eq!(listing.lines().skip(1).filter(|l| l.ends_with(",1")).count(), 100, "{listing}");
    assert_eq!(listing.lines().skip(1).filter(|l| l.ends_with(",0")).count(), 300);

    // Damage the CD array of the record of one row: code 13 is never written.
    let located = text(&mdfkit(&["cat", mdf_arg, "dbo.Orders", "--with-location", "--format", "csv"]).stdout);
    let header: Vec<&str> = located.lines().next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let row: Vec<String> =
        located.lines().nth(200).unwrap().split(',').map(|f| f.trim_matches('"').to_string()).collect();
    let page_no: usize = row[at("__page")].split(':').nth(1).unwrap().parse().unwrap();
    let slot: usize = row[at("__slot")].parse().unwrap();
    let page = &mut files[0].bytes[page_no * 8192..(page_no + 1) * 8192];
    let record = usize::from(u16::from_le_bytes([page[8192 - 2 * (slot + 1)], page[8192 - 2 * (slot + 1) + 1]]));
    assert_eq!(page[record] & 1, 1, "a CD record");
    page[record + 2] = (page[record + 2] & 0xf0) | 0x0d;
    mdfkit_forge::page::seal(page);
    std::fs::write(&mdf, &files[0].bytes).unwrap();
    let broken = mdfkit(&["cat", mdf_arg, "dbo.Orders", "--format", "csv"]);
    assert_eq!(broken.status.code(), Some(2), "{}", text(&broken.stderr));
    let message = text(&broken.stderr);
    assert!(
        message.contains(&format!("1:{page_no}"))
            && message.contains(&format!("slot {slot}"))
            && message.contains("CD code 13"),
        "{message}"
    );
    let salvaged = mdfkit(&["cat", mdf_arg, "dbo.Orders", "--format", "csv", "--salvage"]);
    assert_eq!(body(&salvaged).len(), 399, "{}", text(&salvaged.stderr));
    std::fs::remove_dir_all(tmp).ok();
}

/// The corpus' pubs.mdf and `mdfkit cat ... dbo.authors --with-location --format json` of it
/// (`None` after the corpus helper's loud skip).
fn pubs_authors_located() -> Option<(String, serde_json::Value)> {
    let pubs = corpus()?.join("mdf/itsligo-sampledbs__pubs.mdf").to_str().unwrap().to_string();
    let authors = mdfkit(&["cat", &pubs, "dbo.authors", "--with-location", "--format", "json"]);
    assert_eq!(authors.status.code(), Some(0), "{}", text(&authors.stderr));
    Some((pubs, serde_json::from_slice(&authors.stdout).unwrap()))
}

#[test]
fn page_prints_a_page_like_dbcc_page_and_as_json() {
    let Some((pubs, authors)) = pubs_authors_located() else { return };
    let pubs = pubs.as_str();
    let listed = mdfkit(&["pages", pubs, "--type", "data", "--format", "json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let first = &authors[0];
    let page_id = first["__page"].as_str().unwrap();
    let summary = listed.as_array().unwrap().iter().find(|p| p["page"] == page_id).unwrap();

    let out = mdfkit(&["page", pubs, page_id, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for (ours, theirs) in [("page", "page"), ("type", "type"), ("level", "level"), ("slots", "slots")] {
        assert_eq!(page[ours], summary[theirs], "{ours}");
    }
    assert_eq!(page["free_bytes"], summary["free_bytes"]);
    assert_eq!(page["allocation_unit"], summary["allocation_unit"]);
    assert_eq!(page["owner"], "dbo.authors");
    let record = &page["records"][first["__slot"].as_u64().unwrap() as usize];
    let parts: u64 = record["fields"].as_array().unwrap().iter().map(|f| f["length"].as_u64().unwrap()).sum();
    assert_eq!(parts, record["length"].as_u64().unwrap());
    let au_id = record["columns"].as_array().unwrap().iter().find(|c| c["name"] == "au_id").unwrap();
    assert_eq!(au_id["value"], first["au_id"]);

    let dbcc = text(&mdfkit(&["page", pubs, page_id]).stdout);
    assert!(dbcc.starts_with(&format!("PAGE: ({page_id})\n")), "{dbcc}");
    assert!(dbcc.contains("m_slotCnt") && dbcc.contains("Record Type = PRIMARY_RECORD"), "{dbcc}");
    assert!(dbcc.contains(&format!("au_id = {}", first["au_id"].as_str().unwrap())), "{dbcc}");
    // Microsoft's instpubs.sql clusters authors on its primary key UPKCL_auidind.
    let owner = format!(
        "Owner: dbo.authors, index 1 UPKCL_auidind, partition 1, IN_ROW_DATA (allocation unit {})",
        page["allocation_unit"]
    );
    assert!(dbcc.contains(&owner), "{dbcc}");
}

/// `search` finds a row's key where the scan says the row lives: on its page, inside its record,
/// with the page's type and allocation unit as `pages` lists them.
#[test]
fn search_finds_a_value_inside_the_record_the_scan_reads_it_from() {
    let Some((pubs, authors)) = pubs_authors_located() else { return };
    let pubs = pubs.as_str();
    let row = &authors[3];
    let (au_id, page_id) = (row["au_id"].as_str().unwrap(), row["__page"].as_str().unwrap());
    let page = mdfkit(&["page", pubs, page_id, "--format", "json"]);
    let page: serde_json::Value = serde_json::from_slice(&page.stdout).unwrap();
    let record = &page["records"][row["__slot"].as_u64().unwrap() as usize];
    let (start, len) = (record["offset"].as_u64().unwrap(), record["length"].as_u64().unwrap());

    let out = mdfkit(&["search", pubs, "--type", "varchar(11)", "--value", au_id, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let hits: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hit = hits
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["page"] == page_id && (start..start + len).contains(&h["offset"].as_u64().unwrap()))
        .unwrap_or_else(|| panic!("{au_id} not found in {page_id} slot {}: {hits}", row["__slot"]));
    assert_eq!(hit["page_type"], page["type"]);
    assert_eq!(hit["allocation_unit"], page["allocation_unit"]);

    let bad = mdfkit(&["search", pubs, "--type", "datetime", "--value", "2024-01-01"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("searching \"datetime\" values"), "{}", text(&bad.stderr));
}

#[test]
fn studio_refuses_a_non_loopback_host_without_allow_remote() {
    let out = mdfkit(&["studio", "shop.mdf", "--host", "0.0.0.0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--allow-remote"), "{}", text(&out.stderr));
}

/// `cat --where`: the studio's filter from the command line, on pubs against the rows the
/// corpus' expected file lists (from the script that built pubs). `price>19.99` compares as
/// numbers and skips NULL prices; `contains` ignores case; the filter's column need not be shown
/// (`--columns`); `--limit` counts matches. A condition without an operator is refused as a usage
/// error (exit 2), an unknown column by name with the table's columns.
#[test]
fn cat_where_keeps_the_rows_passing_the_studio_s_filter() {
    let Some(dir) = corpus() else { return };
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("expected/itsligo-sampledbs__pubs.mdf.expected.json")).unwrap(),
    )
    .unwrap();
    let rows = |table: &str| -> Vec<serde_json::Value> {
        let t = expected["tables"].as_array().unwrap().iter().find(|t| t["name"] == table).unwrap();
        t["rows"].as_array().unwrap().clone()
    };
    let pubs = dir.join("mdf/itsligo-sampledbs__pubs.mdf");
    let pubs = pubs.to_str().unwrap();
    let ids = |args: &[&str]| -> Vec<String> {
        let run = mdfkit(&[&["cat", "--format", "csv", pubs], args].concat());
        assert_eq!(run.status.code(), Some(0), "{args:?}: {}", text(&run.stderr));
        let mut ids: Vec<String> =
            text(&run.stdout).lines().skip(1).map(|l| l.split(',').next().unwrap().into()).collect();
        ids.sort();
        ids
    };
    let mut dear: Vec<String> = rows("titles")
        .iter()
        .filter(|r| r["price"].as_str().and_then(|p| p.parse::<f64>().ok()).is_some_and(|p| p > 19.99))
        .map(|r| r["title_id"].as_str().unwrap().trim().to_string())
        .collect();
    dear.sort();
    assert!(!dear.is_empty());
    assert_eq!(ids(&["dbo.titles", "--columns", "title_id", "--where", "price > 19.99"]), dear);
    let mut ring: Vec<String> = rows("authors")
        .iter()
        .filter(|r| r["au_lname"].as_str().unwrap().to_lowercase().contains("ring"))
        .map(|r| r["au_id"].as_str().unwrap().to_string())
        .collect();
    ring.sort();
    assert!(ring.len() > 1);
    assert_eq!(ids(&["dbo.authors", "--where", "au_lname contains RING"]), ring);
    assert_eq!(ids(&["dbo.authors", "--where", "au_lname contains RING", "--limit", "1"]).len(), 1);

    let bad = mdfkit(&["cat", pubs, "dbo.authors", "--where", "state CA"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(text(&bad.stderr).contains("COLUMN=VALUE"), "{}", text(&bad.stderr));
    let unknown = mdfkit(&["cat", pubs, "dbo.authors", "--where", "nosuch=1"]);
    assert_ne!(unknown.status.code(), Some(0));
    assert!(
        text(&unknown.stderr).contains("dbo.authors: no column nosuch (columns: au_id"),
        "{}",
        text(&unknown.stderr)
    );
}

/// `mdfkit compare`: RestoreTimeClean's chain at STOPAT '2017-06-01 13:22:44' against the same
/// chain to its end. The rows of dbo.steps that differ are the later inserts: each after the
/// point-in-time restore's last `dt`, the last of them the whole chain's (EXPECTED.json, to the
/// second); without --table every table of both is listed with its counts.
#[test]
fn compare_lists_the_rows_a_chain_gains_after_a_point_in_time() {
    let Some(dir) = corpus() else { return };
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("chains/EXPECTED.json")).unwrap()).unwrap();
    let cases = expected["chains"].as_array().unwrap();
    let case = |stopat: bool| {
        cases.iter().find(|c| c["folder"] == "restoretimeclean" && c.get("stopat").is_some() == stopat).unwrap()
    };
    let mut files: Vec<String> = std::fs::read_dir(dir.join("chains/restoretimeclean"))
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let stopat = case(true)["stopat"].as_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["compare", "--format", "csv", "--stopat", stopat];
        args.extend(files.iter().map(String::as_str));
        for f in &files {
            args.extend(["--with", f.as_str()]);
        }
        args.extend(extra);
        let out = mdfkit(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out
    };
    let out = run(&["--table", "dbo.steps", "--limit", "1000"]);
    let lines: Vec<String> = text(&out.stdout).lines().skip(1).map(String::from).collect();
    assert!(!lines.is_empty());
    // __change,__side,__position,step,dt
    let dts: Vec<String> = lines
        .iter()
        .map(|l| {
            assert!(l.starts_with("inserted,other,"), "{l}");
            l.split(',').nth(4).unwrap().chars().take(19).collect()
        })
        .collect();
    assert!(dts.iter().all(|d| d.as_str() > case(true)["max_dt"].as_str().unwrap()), "{dts:?}");
    assert_eq!(dts.iter().max().map(String::as_str), case(false)["max_dt"].as_str());
    assert!(text(&out.stderr).contains(&format!("dbo.steps: {} inserted, 0 deleted, 0 changed", lines.len())));
    // Listed a third at a time, each listing's stderr naming the cursor of the next: the same
    // rows in the same order (`--after-row`, beside the global `--after` of `--stopatmark`).
    let per = (lines.len() / 3).max(1).to_string();
    let (mut paged, mut listings, mut cursor) = (Vec::new(), 0, None::<String>);
    while listings <= lines.len() {
        let mut extra = vec!["--table", "dbo.steps", "--limit", per.as_str()];
        if let Some(c) = &cursor {
            extra.extend(["--after-row", c.as_str()]);
        }
        let out = run(&extra);
        listings += 1;
        paged.extend(text(&out.stdout).lines().skip(1).map(String::from));
        let stderr = text(&out.stderr);
        cursor = stderr.split("--after-row ").nth(1).and_then(|r| r.split_whitespace().next()).map(String::from);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(paged, lines);
    assert!(listings >= 3, "{listings} listings of {} rows, {per} each", lines.len());
    // Each page holding an inserted row differs, and the other side names dbo.steps its owner.
    let pages = text(&run(&["--pages", "--limit", "100000"]).stdout);
    assert!(pages.starts_with("page,type,owner,type_other,owner_other,first_differing_byte,bytes_differing"));
    for l in &lines {
        let at = l.split(',').nth(2).unwrap();
        let page = &at[..at.rfind(':').unwrap()];
        let listed = pages.lines().find(|p| p.split(',').next() == Some(page));
        assert!(listed.is_some_and(|p| p.split(',').nth(4) == Some("dbo.steps")), "{page} not listed:\n{pages}");
    }
    let tables = text(&run(&[]).stdout);
    assert!(
        tables.starts_with("table,rows,rows_other,pages,pages_other") && tables.contains("\ndbo.steps,"),
        "{tables}"
    );
    // `mdfkit page` of the first inserted row's page, at the stop point and at the chain's end:
    // the records between them are the rows the listing says were inserted there (a slot of a
    // transaction uncommitted at the stop point stays, its record gone).
    let first = lines[0].split(',').nth(2).unwrap();
    let page = &first[..first.rfind(':').unwrap()];
    let on_page =
        lines.iter().filter(|l| l.split(',').nth(2).is_some_and(|at| at.starts_with(&format!("{page}:")))).count();
    let records = |stop: &[&str]| {
        let mut args = vec!["page", "--format", "json"];
        args.extend(stop);
        args.extend(files.iter().map(String::as_str));
        args.push(page);
        let out = mdfkit(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let anatomy: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
        anatomy["records"].as_array().unwrap().iter().filter(|r| r["record_type"] == "PRIMARY_RECORD").count()
    };
    assert_eq!(records(&[]) - records(&["--stopat", stopat]), on_page);
    // Where a stop point would be ignored, it is refused.
    for command in [&["log"][..], &["studio"]] {
        let mut args = command.to_vec();
        args.extend(["--stopat", stopat]);
        args.extend(files.iter().map(String::as_str));
        let out = mdfkit(&args);
        assert_eq!(out.status.code(), Some(2), "{command:?}");
        assert!(text(&out.stderr).contains("stop"), "{}", text(&out.stderr));
    }
}

/// `mdfkit read-split` with `split` on stdin.
fn read_split(split: &str, options: &[&str]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_mdfkit"))
        .arg("read-split")
        .args(options)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mdfkit read-split");
    child.stdin.take().unwrap().write_all(split.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// AdventureWorksLT's data file in the corpus and SQL Server's row count of its table SalesLT.`name`.
fn adventureworks_and_row_count(corpus: &Path, name: &str) -> (PathBuf, serde_json::Value) {
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("expected/jdhj-edx__adventureworkslt2012_data.mdf.expected.json"))
            .unwrap(),
    )
    .unwrap();
    let table =
        expected["tables"].as_array().unwrap().iter().find(|t| t["schema"] == "SalesLT" && t["name"] == name).unwrap();
    (corpus.join("big/jdhj-edx__adventureworkslt2012_data.mdf"), table["row_count"].clone())
}

#[test]
fn splits_read_one_by_one_return_every_row_as_arrow_streams() {
    let Some(dir) = corpus() else { return };
    let (aw, customers) = adventureworks_and_row_count(&dir, "Customer");
    let plan = mdfkit(&[
        "splits",
        aw.to_str().unwrap(),
        "--table",
        "SalesLT.Customer",
        "--target-bytes",
        "32768",
        "--columns",
        "CustomerID,ModifiedDate",
    ]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
    let splits: Vec<String> = text(&plan.stdout).lines().map(str::to_string).collect();
    assert!(splits.len() > 2, "{splits:?}");
    let mut rows = 0;
    for split in &splits {
        let run = read_split(split, &["--spark-types"]);
        assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
        let reader = arrow_ipc::reader::StreamReader::try_new(run.stdout.as_slice(), None).unwrap();
        let schema = reader.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["CustomerID", "ModifiedDate"]);
        // datetime as Spark holds it: microseconds.
        assert_eq!(
            schema.field(1).data_type(),
            &arrow_schema::DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None)
        );
        rows += reader.map(|b| b.unwrap().num_rows()).sum::<usize>();
    }
    assert_eq!(serde_json::json!(rows), customers);

    // A split whose pages lie past the end of the file is refused, naming the table.
    let past_end = splits[0].replacen("\"pages\":[[1,", "\"pages\":[[1,99999", 1);
    let run = read_split(&past_end, &[]);
    assert_eq!(run.status.code(), Some(2), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("SalesLT.Customer") && text(&run.stderr).contains("past the end"));
    let unknown = mdfkit(&["splits", aw.to_str().unwrap(), "--table", "SalesLT.Nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(text(&unknown.stderr).contains("no table named SalesLT.Nope"), "{}", text(&unknown.stderr));
}

/// `read-split --socket PATH` (the JVM data source's way): the same stream as on stdout, written to
/// the Unix socket its reader listens at; a socket nobody listens at fails naming it.
#[cfg(unix)]
#[test]
fn read_split_writes_to_a_unix_socket_what_it_writes_to_stdout() {
    let Some(dir) = corpus() else { return };
    let (aw, products) = adventureworks_and_row_count(&dir, "Product");
    let plan = mdfkit(&["splits", aw.to_str().unwrap(), "--table", "SalesLT.Product"]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan.stderr));
    let split = text(&plan.stdout).lines().next().unwrap().to_string();
    let on_stdout = read_split(&split, &["--spark-types"]);
    assert_eq!(on_stdout.status.code(), Some(0), "{}", text(&on_stdout.stderr));

    let folder = std::env::temp_dir().join(format!("mdfkit-cli-socket-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("s");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let reading = std::thread::spawn(move || {
        let mut stream = Vec::new();
        std::io::Read::read_to_end(&mut listener.accept().unwrap().0, &mut stream).unwrap();
        stream
    });
    let run = read_split(&split, &["--spark-types", "--socket", path.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    assert!(run.stdout.is_empty());
    let stream = reading.join().unwrap();
    assert!(stream == on_stdout.stdout, "the socket's stream differs from stdout's");
    let reader = arrow_ipc::reader::StreamReader::try_new(stream.as_slice(), None).unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(serde_json::json!(rows), products);

    let nobody = folder.join("nobody");
    let run = read_split(&split, &["--socket", nobody.to_str().unwrap()]);
    std::fs::remove_dir_all(&folder).unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    assert!(text(&run.stderr).contains("cannot connect to the socket") && text(&run.stderr).contains("nobody"));
}
