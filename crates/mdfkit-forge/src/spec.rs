//! The declarative input of the forge: tables, column types, row counts and value generators.
//!
//! The same [`Spec`] always gives the same bytes: every value is a pure function of the spec's
//! seed, the table, the column and the row number ([`crate::value::generate`]).

/// The on-disk format to write (`dbi_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// SQL Server 2016 (852).
    V852,
    /// SQL Server 2019 (904).
    V904,
}

impl Version {
    pub fn dbi_version(self) -> u16 {
        match self {
            Version::V852 => 852,
            Version::V904 => 904,
        }
    }

    /// The compatibility level a new database of this version gets.
    pub fn compatibility_level(self) -> u16 {
        match self {
            Version::V852 => 130,
            Version::V904 => 150,
        }
    }
}

/// A whole database.
#[derive(Debug, Clone)]
pub struct Spec {
    pub name: String,
    pub version: Version,
    pub seed: u64,
    /// Number of data files (1 = the `.mdf` only; more add `.ndf` files with file ids 3, 4, ...).
    /// User tables' extents are spread over all of them, one extent at a time (proportional fill).
    pub data_files: u16,
    pub schemas: Vec<String>,
    pub tables: Vec<TableSpec>,
}

impl Spec {
    pub fn new(name: &str, version: Version, seed: u64) -> Self {
        Spec { name: name.into(), version, seed, data_files: 1, schemas: Vec::new(), tables: Vec::new() }
    }

    pub fn table(mut self, t: TableSpec) -> Self {
        self.tables.push(t);
        self
    }
}

/// How a table's rows are stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    Heap,
    /// A clustered primary key on one integer column whose generator is an ascending
    /// [`Gen::Sequence`] (rows are written in key order without sorting).
    Clustered {
        key: usize,
    },
}

/// One table.
#[derive(Debug, Clone)]
pub struct TableSpec {
    /// Schema name: `dbo`, or one of [`Spec::schemas`].
    pub schema: String,
    pub name: String,
    pub columns: Vec<ColumnSpec>,
    /// Live rows (what a reader must return).
    pub rows: u64,
    pub layout: Layout,
    /// Every n-th generated row is written as a ghost record (deleted, not cleaned up): generated,
    /// stored, and not part of the table's rows.
    pub ghost_every: Option<u64>,
    /// Heaps: every n-th live row is stored as a forwarding stub on its page and a forwarded
    /// record on a later page.
    pub forward_every: Option<u64>,
    /// `Some((first, rows))`: the columns from index `first` on were added (ALTER TABLE ADD)
    /// after the first `rows` generated rows were written, which lack them: those rows read each
    /// added column's [`ColumnSpec::default`] (kept in sysseobjvalues), NULL without one.
    pub added_after: Option<(usize, u64)>,
    /// The vardecimal storage format (`sp_tableoption ..., 'vardecimal storage format', 'on'`,
    /// SQL Server 2005 SP2 on): decimal and numeric columns stored as variable-length columns in
    /// the vardecimal encoding.
    pub vardecimal: bool,
    /// `DATA_COMPRESSION`: ROW writes every record in the CD format (`crate::cd`); PAGE too, its
    /// pages without a CI structure but every `page_ci_every`-th data page.
    pub compression: Compression,
    /// PAGE compression: every n-th data page starts with a CI structure (an anchor record without
    /// prefixes, no dictionary: `crate::cd::compression_info`).
    pub page_ci_every: Option<u64>,
    /// Generate the values of the table of this qualified name (`schema.name`) rather than this
    /// table's own: copies of one table stored differently (plain, ROW, PAGE) hold the same rows.
    pub values_of: Option<String>,
    /// Nonclustered indexes on the table (index ids 2, 3, ... in this order).
    pub indexes: Vec<IndexSpec>,
}

/// A nonclustered index (`CREATE [UNIQUE] NONCLUSTERED INDEX ... INCLUDE (...) WITH
/// (DATA_COMPRESSION = ...)`), written in the CD format (`crate::cd`): its own compression, which
/// need not be the table's. Each live row has one leaf record: the key columns, then the row
/// locator (the clustered key, or the heap RID), the included columns (see `build.rs` for the
/// order).
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub name: String,
    /// Key columns (indexes into the table's columns), in key order: integer columns.
    pub keys: Vec<usize>,
    /// Included columns: in-row columns that are neither key columns nor the clustered key.
    pub include: Vec<usize>,
    /// UNIQUE: the key values must be unique (a non-unique index's key also holds the locator).
    pub unique: bool,
    /// ROW or PAGE (its pages hold no CI structure: CD records only).
    pub compression: Compression,
    /// At most this many records on a page, at every level (a low fill factor with PAD_INDEX):
    /// deep trees from few rows.
    pub rows_per_page: Option<u16>,
}

impl IndexSpec {
    pub fn new(name: &str, keys: &[usize], compression: Compression) -> Self {
        IndexSpec {
            name: name.into(),
            keys: keys.to_vec(),
            include: Vec::new(),
            unique: false,
            compression,
            rows_per_page: None,
        }
    }
}

/// A table's `DATA_COMPRESSION` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Compression {
    #[default]
    None,
    Row,
    Page,
}

impl Compression {
    /// `sysrowsets.cmprlevel` (`sys.partitions.data_compression`).
    pub fn level(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Row => 1,
            Compression::Page => 2,
        }
    }
}

impl TableSpec {
    pub fn new(schema: &str, name: &str, layout: Layout, rows: u64) -> Self {
        TableSpec {
            schema: schema.into(),
            name: name.into(),
            columns: Vec::new(),
            rows,
            layout,
            ghost_every: None,
            forward_every: None,
            added_after: None,
            vardecimal: false,
            compression: Compression::None,
            page_ci_every: None,
            values_of: None,
            indexes: Vec::new(),
        }
    }

    pub fn index(mut self, index: IndexSpec) -> Self {
        self.indexes.push(index);
        self
    }

    pub fn column(mut self, c: ColumnSpec) -> Self {
        self.columns.push(c);
        self
    }

    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }
}

/// One column.
#[derive(Debug, Clone)]
pub struct ColumnSpec {
    pub name: String,
    pub ty: ColType,
    pub gen: Gen,
    /// Which rows are NULL (the column is declared nullable unless this is `Never`).
    pub nulls: Nulls,
    /// SPARSE: stored in each row's sparse vector (the column must be nullable).
    pub sparse: bool,
    /// For a column added after rows were written ([`TableSpec::added_after`]): the value those
    /// rows read (sysseobjvalues' stored default); required when the column is NOT NULL.
    pub default: Option<crate::Val>,
}

impl ColumnSpec {
    pub fn new(name: &str, ty: ColType, gen: Gen, nulls: Nulls) -> Self {
        ColumnSpec { name: name.into(), ty, gen, nulls, sparse: false, default: None }
    }

    /// The column, declared SPARSE.
    pub fn sparse(mut self) -> Self {
        self.sparse = true;
        self
    }

    /// The column, with the stored default rows older than it read.
    pub fn with_default(mut self, value: crate::Val) -> Self {
        self.default = Some(value);
        self
    }

    pub fn nullable(&self) -> bool {
        self.nulls != Nulls::Never
    }
}

/// NULL patterns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Nulls {
    Never,
    /// Rows whose number is a multiple of n (row 0 included).
    Every(u64),
    /// Each row independently with this probability (0..=1).
    Random(f64),
    Always,
}

/// Value generators.
#[derive(Debug, Clone, PartialEq)]
pub enum Gen {
    /// Integers `start + step * row` (integer types only).
    Sequence { start: i64, step: i64 },
    /// Uniform over the type's useful range (strings and binaries: length uniform in
    /// 0..=declared length, capped at 100 for `(max)`).
    Random,
    /// Strings and binaries of a length (characters or bytes) uniform in `min..=max`.
    Length { min: usize, max: usize },
    /// Integers uniform in `lo..=hi` (any numeric type: the unscaled value for decimal/money;
    /// datetime2: the date's days since 0001-01-01).
    Range { lo: i64, hi: i64 },
    /// One of these strings, uniformly (string types).
    Choice(Vec<String>),
}

/// The SQL types the forge writes (every type mdfkit decodes, xml and CLR types excepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    TinyInt,
    SmallInt,
    Int,
    BigInt,
    Bit,
    Decimal(u8, u8),
    Numeric(u8, u8),
    Money,
    SmallMoney,
    Real,
    Float,
    Date,
    Time(u8),
    DateTime2(u8),
    DateTimeOffset(u8),
    DateTime,
    SmallDateTime,
    /// Lengths in characters; `None` = `(max)`.
    Char(u16),
    VarChar(Option<u16>),
    NChar(u16),
    NVarChar(Option<u16>),
    Binary(u16),
    VarBinary(Option<u16>),
    UniqueIdentifier,
}

impl ColType {
    /// `sys.types.system_type_id`.
    pub fn type_id(self) -> u8 {
        use ColType::*;
        match self {
            TinyInt => 48,
            SmallInt => 52,
            Int => 56,
            BigInt => 127,
            Bit => 104,
            Decimal(..) => 106,
            Numeric(..) => 108,
            Money => 60,
            SmallMoney => 122,
            Real => 59,
            Float => 62,
            Date => 40,
            Time(_) => 41,
            DateTime2(_) => 42,
            DateTimeOffset(_) => 43,
            DateTime => 61,
            SmallDateTime => 58,
            Char(_) => 175,
            VarChar(_) => 167,
            NChar(_) => 239,
            NVarChar(_) => 231,
            Binary(_) => 173,
            VarBinary(_) => 165,
            UniqueIdentifier => 36,
        }
    }

    /// Bytes in the fixed part of a record, or `None` for variable-length types.
    pub fn fixed_len(self) -> Option<usize> {
        use ColType::*;
        Some(match self {
            TinyInt | Bit => 1,
            SmallInt => 2,
            Int | Real | SmallMoney | SmallDateTime => 4,
            BigInt | Money | Float | DateTime => 8,
            Decimal(p, _) | Numeric(p, _) => decimal_len(p),
            Date => 3,
            Time(s) => time_len(s),
            DateTime2(s) => time_len(s) + 3,
            DateTimeOffset(s) => time_len(s) + 5,
            Char(n) | Binary(n) => n as usize,
            NChar(n) => 2 * n as usize,
            UniqueIdentifier => 16,
            VarChar(_) | NVarChar(_) | VarBinary(_) => return None,
        })
    }

    /// Maximum bytes of a variable-length value; `None` for `(max)` and fixed types.
    pub fn max_bytes(self) -> Option<usize> {
        match self {
            ColType::VarChar(Some(n)) | ColType::VarBinary(Some(n)) => Some(n as usize),
            ColType::NVarChar(Some(n)) => Some(2 * n as usize),
            _ => None,
        }
    }

    pub fn is_max(self) -> bool {
        matches!(self, ColType::VarChar(None) | ColType::NVarChar(None) | ColType::VarBinary(None))
    }

    pub fn is_text(self) -> bool {
        matches!(self, ColType::Char(_) | ColType::VarChar(_) | ColType::NChar(_) | ColType::NVarChar(_))
    }

    pub fn is_decimal(self) -> bool {
        matches!(self, ColType::Decimal(..) | ColType::Numeric(..))
    }

    /// The scale of decimal and numeric (0 for every other type).
    pub fn scale(self) -> u8 {
        match self {
            ColType::Decimal(_, s) | ColType::Numeric(_, s) => s,
            _ => 0,
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(self, ColType::TinyInt | ColType::SmallInt | ColType::Int | ColType::BigInt)
    }

    /// `syscolpars.length` (bytes, -1 for max), `prec`, `scale`.
    pub fn length_prec_scale(self) -> (i16, u8, u8) {
        use ColType::*;
        match self {
            TinyInt => (1, 3, 0),
            SmallInt => (2, 5, 0),
            Int => (4, 10, 0),
            BigInt => (8, 19, 0),
            Bit => (1, 1, 0),
            Decimal(p, s) | Numeric(p, s) => (decimal_len(p) as i16, p, s),
            Money => (8, 19, 4),
            SmallMoney => (4, 10, 4),
            Real => (4, 24, 0),
            Float => (8, 53, 0),
            Date => (3, 10, 0),
            Time(s) => (time_len(s) as i16, if s == 0 { 8 } else { 9 + s }, s),
            DateTime2(s) => (time_len(s) as i16 + 3, if s == 0 { 19 } else { 20 + s }, s),
            DateTimeOffset(s) => (time_len(s) as i16 + 5, if s == 0 { 26 } else { 27 + s }, s),
            DateTime => (8, 23, 3),
            SmallDateTime => (4, 16, 0),
            UniqueIdentifier => (16, 0, 0),
            Char(n) | Binary(n) => (n as i16, 0, 0),
            NChar(n) => (2 * n as i16, 0, 0),
            VarChar(n) | VarBinary(n) => (n.map_or(-1, |n| n as i16), 0, 0),
            NVarChar(n) => (n.map_or(-1, |n| 2 * n as i16), 0, 0),
        }
    }

    /// `sysrscols.ti`: type id in bits 0-7; max length in bits 8-23 for variable-length types
    /// (0 = max), precision and scale for decimal, scale for the time types.
    pub fn ti(self) -> u32 {
        let id = u32::from(self.type_id());
        let (len, prec, scale) = self.length_prec_scale();
        use ColType::*;
        match self {
            Decimal(..) | Numeric(..) => id | u32::from(prec) << 8 | u32::from(scale) << 16,
            Time(s) | DateTime2(s) | DateTimeOffset(s) => id | u32::from(s) << 8,
            Char(_) | VarChar(_) | NChar(_) | NVarChar(_) | Binary(_) | VarBinary(_) => id | (len.max(0) as u32) << 8,
            _ => id,
        }
    }

    /// The type as T-SQL spells it.
    pub fn spelling(self) -> String {
        use ColType::*;
        let len = |n: Option<u16>| n.map_or("max".to_string(), |n| n.to_string());
        match self {
            TinyInt => "tinyint".into(),
            SmallInt => "smallint".into(),
            Int => "int".into(),
            BigInt => "bigint".into(),
            Bit => "bit".into(),
            Decimal(p, s) => format!("decimal({p},{s})"),
            Numeric(p, s) => format!("numeric({p},{s})"),
            Money => "money".into(),
            SmallMoney => "smallmoney".into(),
            Real => "real".into(),
            Float => "float".into(),
            Date => "date".into(),
            Time(s) => format!("time({s})"),
            DateTime2(s) => format!("datetime2({s})"),
            DateTimeOffset(s) => format!("datetimeoffset({s})"),
            DateTime => "datetime".into(),
            SmallDateTime => "smalldatetime".into(),
            Char(n) => format!("char({n})"),
            VarChar(n) => format!("varchar({})", len(n)),
            NChar(n) => format!("nchar({n})"),
            NVarChar(n) => format!("nvarchar({})", len(n)),
            Binary(n) => format!("binary({n})"),
            VarBinary(n) => format!("varbinary({})", len(n)),
            UniqueIdentifier => "uniqueidentifier".into(),
        }
    }
}

fn decimal_len(p: u8) -> usize {
    match p {
        0..=9 => 5,
        10..=19 => 9,
        20..=28 => 13,
        _ => 17,
    }
}

fn time_len(s: u8) -> usize {
    match s {
        0..=2 => 3,
        3..=4 => 4,
        _ => 5,
    }
}

/// Why a spec cannot be forged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

impl Spec {
    /// Checks what the forge supports: names, key columns, row sizes.
    pub fn validate(&self) -> Result<(), SpecError> {
        let err = |m: String| Err(SpecError(m));
        if self.data_files == 0 {
            return err("a database needs at least one data file".into());
        }
        let mut names = std::collections::HashSet::new();
        for t in &self.tables {
            let q = t.qualified_name();
            if !names.insert(q.to_ascii_lowercase()) {
                return err(format!("{q}: two tables with this name"));
            }
            if t.schema != "dbo" && !self.schemas.contains(&t.schema) {
                return err(format!("{q}: schema {} is not in the spec's schemas", t.schema));
            }
            if t.columns.is_empty() {
                return err(format!("{q}: no columns"));
            }
            if t.columns.len() > 1000 {
                return err(format!("{q}: more than 1000 columns"));
            }
            let fixed: usize = t.columns.iter().filter_map(|c| c.ty.fixed_len()).sum();
            if fixed > 8000 {
                return err(format!("{q}: {fixed} bytes of fixed-length columns (at most 8000)"));
            }
            if let Layout::Clustered { key } = t.layout {
                let Some(c) = t.columns.get(key) else { return err(format!("{q}: key column {key} does not exist")) };
                let ascending = matches!(c.gen, Gen::Sequence { step, .. } if step > 0);
                if !c.ty.is_integer() || !ascending || c.nulls != Nulls::Never {
                    return err(format!(
                        "{q}: the clustered key {} must be a NOT NULL integer column with an ascending Sequence",
                        c.name
                    ));
                }
                if t.forward_every.is_some() {
                    return err(format!("{q}: forwarded records exist only in heaps"));
                }
            }
            if t.compression != Compression::None {
                if t.columns.len() > 127 {
                    return err(format!("{q}: compressed tables of more than 127 columns are not written"));
                }
                if t.vardecimal || t.columns.iter().any(|c| c.sparse || c.ty == ColType::SmallDateTime) {
                    return err(format!(
                        "{q}: compressed tables with vardecimal, sparse or smalldatetime columns are not written"
                    ));
                }
            }
            if let Some((first, _)) = t.added_after {
                if first == 0 || first > t.columns.len() {
                    return err(format!("{q}: added columns must start after the first column"));
                }
                if let Some(c) = t.columns[first..].iter().find(|c| !c.nullable() && c.default.is_none()) {
                    return err(format!("{q}.{}: a NOT NULL column added later needs a default", c.name));
                }
                if let Layout::Clustered { key } = t.layout {
                    if key >= first {
                        return err(format!("{q}: the clustered key cannot be an added column"));
                    }
                }
            }
            for ix in &t.indexes {
                validate_index(&q, t, ix)?;
            }
            for c in &t.columns {
                if c.sparse && (!c.nullable() || c.ty.is_max()) {
                    return err(format!(
                        "{q}.{}: sparse columns must be nullable, and (max) ones are not forged",
                        c.name
                    ));
                }
                if c.default.is_some() && c.sparse {
                    return err(format!("{q}.{}: a sparse column with a stored default", c.name));
                }
                if let Gen::Sequence { .. } | Gen::Range { .. } = c.gen {
                    if c.ty.is_text() || matches!(c.ty, ColType::Binary(_) | ColType::VarBinary(_)) {
                        return err(format!("{q}.{}: integer generator on a {}", c.name, c.ty.spelling()));
                    }
                }
                if let ColType::Decimal(p, s) | ColType::Numeric(p, s) = c.ty {
                    if p == 0 || p > 38 || s > p {
                        return err(format!("{q}.{}: bad precision/scale", c.name));
                    }
                }
                if let ColType::Time(s) | ColType::DateTime2(s) | ColType::DateTimeOffset(s) = c.ty {
                    if s > 7 {
                        return err(format!("{q}.{}: scale above 7", c.name));
                    }
                }
            }
        }
        Ok(())
    }
}

/// What the forge writes of a nonclustered index: integer keys (their order is the values'),
/// in-row included columns, a compressed index.
fn validate_index(q: &str, t: &TableSpec, ix: &IndexSpec) -> Result<(), SpecError> {
    let err = |m: String| Err(SpecError(format!("{q} index {}: {m}", ix.name)));
    if ix.compression == Compression::None {
        return err("uncompressed nonclustered indexes are not written (DATA_COMPRESSION = ROW or PAGE)".into());
    }
    if ix.keys.is_empty() {
        return err("no key column".into());
    }
    if ix.rows_per_page.is_some_and(|n| n < 2) {
        return err("rows_per_page below 2 makes no tree".into());
    }
    let clustered_key = match t.layout {
        Layout::Clustered { key } => Some(key),
        Layout::Heap => None,
    };
    let mut seen = std::collections::HashSet::new();
    for &c in ix.keys.iter().chain(&ix.include) {
        let Some(col) = t.columns.get(c) else { return err(format!("column {c} does not exist")) };
        if !seen.insert(c) {
            return err(format!("column {} named twice", col.name));
        }
        if col.sparse || col.ty.is_max() || col.ty == ColType::SmallDateTime {
            return err(format!("column {}: sparse, (max) and smalldatetime columns are not indexed", col.name));
        }
        if t.added_after.is_some_and(|(first, _)| c >= first) {
            return err(format!("column {} was added later", col.name));
        }
    }
    if let Some(c) = ix.keys.iter().map(|&c| &t.columns[c]).find(|c| !c.ty.is_integer()) {
        return err(format!("key column {}: only integer keys are written", c.name));
    }
    if clustered_key.is_some_and(|k| ix.include.contains(&k)) {
        return err("the clustered key is in every index already: not an included column".into());
    }
    Ok(())
}
