//! Shared by the corpus tests (where the corpus is, and what to do when it is not there) and a
//! few forged ones (a table's rows as text).

use std::path::{Path, PathBuf};

/// The corpus folder (`MDFKIT_CORPUS`, default `../shared/corpus` beside the repository). Without
/// it the calling test fails under CI and prints a loud SKIPPED line elsewhere.
#[allow(dead_code)]
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MDFKIT_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus"));
    if dir.join("MANIFEST.tsv").is_file() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!("corpus not found at {} (set MDFKIT_CORPUS): CI must run the corpus tests", dir.display());
    }
    eprintln!(
        "\n*** SKIPPED: corpus not found at {} (set MDFKIT_CORPUS); corpus tests did not run ***\n",
        dir.display()
    );
    None
}

/// One row of a corpus manifest (`MANIFEST.tsv`, `incoming/MANIFEST.tsv`).
#[allow(dead_code)]
pub struct ManifestRow {
    /// As the manifest gives it: relative to the manifest's folder.
    pub file: String,
    pub kind: String,
    /// `dbi_version`; 0 where the manifest leaves it empty.
    pub version: u16,
    /// `db_name`; empty where the manifest leaves it empty.
    pub name: String,
}

/// The rows of the manifest at `path`.
#[allow(dead_code)]
pub fn manifest(path: &Path) -> Vec<ManifestRow> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("manifest lacks {name}"));
    let (file, kind, version, name) = (col("file"), col("kind"), col("dbi_version"), col("db_name"));
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .map(|f| ManifestRow {
            file: f[file].to_string(),
            kind: f[kind].to_string(),
            version: f[version].parse().unwrap_or(0),
            name: f[name].to_string(),
        })
        .collect()
}

/// Where the database's boot page disagrees with the manifest's version and name (where the
/// manifest gives them), one line each.
#[allow(dead_code)]
pub fn manifest_mismatches(db: &mdfkit::Database, row: &ManifestRow) -> Vec<String> {
    let mut out = Vec::new();
    let version = db.catalog().boot.version;
    if row.version != 0 && version != row.version {
        out.push(format!("{}: version {version} != manifest {}", row.file, row.version));
    }
    if !row.name.is_empty() && db.name() != row.name {
        out.push(format!("{}: name {:?} != manifest {:?}", row.file, db.name(), row.name));
    }
    out
}

/// Renders every sys view: how many rendered whole, and a line for each that failed or came out
/// with rows of another width than its columns.
#[allow(dead_code)]
pub fn view_mismatches(db: &mdfkit::Database, file: &str) -> (usize, Vec<String>) {
    let (mut rendered, mut out) = (0, Vec::new());
    for view in mdfkit::catalog::views::VIEW_NAMES {
        match db.catalog().view(view) {
            Ok(v) if v.rows.iter().all(|r| r.len() == v.columns.len()) => rendered += 1,
            Ok(_) => out.push(format!("{file}: {view} has ragged rows")),
            Err(e) => out.push(format!("{file}: {view}: {e}")),
        }
    }
    (rendered, out)
}

/// xorshift64*: a fixed sequence, so every run damages the same bytes. (Not every test that
/// shares this module damages files.)
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The rows of `table` read by the serial scan and by the parallel scan on `threads` threads,
/// each row spelled out and both lists sorted: the parallel scan returns rows in page allocation
/// order, so the two are compared as multisets. (Not every test that shares this module scans.)
#[allow(dead_code)]
pub fn serial_and_parallel_rows(
    db: &mdfkit::Database,
    table: &mdfkit::catalog::model::TableInfo,
    options: &mdfkit::ScanOptions,
    threads: usize,
) -> (Vec<String>, Vec<String>) {
    let rows_of = |parallel: bool| {
        let mut rows = Vec::new();
        let mut spell = |b: arrow_array::RecordBatch| {
            rows.extend(
                (0..b.num_rows())
                    .map(|i| b.columns().iter().map(|c| format!("{:?}", c.slice(i, 1))).collect::<Vec<_>>().join("|")),
            );
            Ok(mdfkit::scan::Flow::Continue)
        };
        if parallel {
            db.scan(table).options(options).threads(threads).batches(&mut spell)
        } else {
            db.scan(table).options(options).batches(&mut spell)
        }
        .unwrap_or_else(|e| panic!("{}: {e}", table.qualified_name()));
        rows.sort();
        rows
    };
    (rows_of(false), rows_of(true))
}

/// dbo.steps.dt of a database (the chains of `chains/`), to the second, sorted.
#[allow(dead_code)]
pub fn step_times(db: &mdfkit::Database) -> Vec<String> {
    step_rows(db).into_iter().map(|(_, dt)| dt).collect()
}

/// dbo.steps rows of a database (the chains of `chains/`): `step` and `dt` to the second, in
/// the order of `dt`.
#[allow(dead_code)]
pub fn step_rows(db: &mdfkit::Database) -> Vec<(Option<i64>, String)> {
    let t = db.catalog().find_table("dbo.steps").expect("dbo.steps");
    let mut rows = Vec::new();
    for p in &t.partitions {
        let decoder = db.row_decoder(&t, p.partition_id, None).unwrap();
        let column = |name: &str| decoder.column_names().iter().position(|c| c == name).unwrap();
        let (step, dt) = (column("step"), column("dt"));
        let mut values = Vec::new();
        db.scan(&t)
            .partition_records(p, |record, _| {
                decoder.decode(record, &mut values)?;
                let step = match values[step] {
                    mdfkit::value::Value::Int(v) => Some(v),
                    _ => None,
                };
                rows.push((step, values[dt].to_string().chars().take(19).collect::<String>()));
                Ok(mdfkit::scan::Flow::Continue)
            })
            .unwrap();
    }
    rows.sort_by(|a, b| a.1.cmp(&b.1));
    rows
}

/// Every row of `table` in scan order, each value spelled as `Value` displays it (`NULL`,
/// numbers, text as is).
#[allow(dead_code)]
pub fn table_rows_text(db: &mdfkit::Database, table: &str) -> Vec<Vec<String>> {
    let t = db.catalog().find_table(table).unwrap_or_else(|| panic!("no table {table}"));
    let mut rows = Vec::new();
    for p in &t.partitions {
        let decoder = db.row_decoder(&t, p.partition_id, None).unwrap();
        let mut values = Vec::new();
        db.scan(&t)
            .partition_records(p, |record, _| {
                decoder.decode(record, &mut values)?;
                rows.push(values.iter().map(|v| v.to_string()).collect());
                Ok(mdfkit::scan::Flow::Continue)
            })
            .unwrap();
    }
    rows
}
