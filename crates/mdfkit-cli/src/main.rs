//! `mdfkit`: look inside SQL Server data files without SQL Server.
//!
//! A thin front end: every command composes calls to the `mdfkit` library and renders the
//! result through [`output`].

mod chain;
mod chart;
mod commands;
mod output;
mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use commands::{parse_page_ranges, PageRanges};
use output::Format;

#[derive(Parser)]
#[command(
    name = "mdfkit",
    version,
    about = "Read Microsoft SQL Server data files (.mdf/.ndf) and backups (.bak/.trn) without SQL Server",
    long_about = "Read Microsoft SQL Server data files (.mdf/.ndf) and backups (.bak/.trn) without SQL Server.\n\n\
        Give every file of the database (the .mdf and any .ndf) or its backups (full, differential,\n\
        logs, stripes), in any order: files are matched by the ids recorded in their own headers.\n\
        Nothing is ever written to the files.\n\n\
        Files may be object URLs: s3://bucket/key (credentials from AWS_* variables or ~/.aws, --endpoint\n\
        for S3-compatible servers) and az://container/blob (AZURE_STORAGE_* variables), or signed\n\
        https:// links (S3 presigned, Azure SAS, CloudFront; `mdfkit share` makes them). Remote objects\n\
        are read by ranged GETs, several in flight (--read-range, --read-ahead), never downloaded first.\n\n\
        Exit codes: 0 success, 1 failure (I/O, unknown table, check found damage), 2 bad input (not a\n\
        data file, damaged page, something not read yet; an export that skipped tables).",
    after_help = "Examples:\n  mdfkit info shop.mdf\n  mdfkit tables shop.mdf shop_2.ndf\n  mdfkit schema shop.mdf dbo.Orders\n  mdfkit sys shop.mdf sys.columns --format csv"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// With a single backup file: the backup set to read, by its position in the file (`mdfkit
    /// backups` lists them; default: the restore chain, the latest full backup with its latest
    /// differential and the logs after them)
    #[arg(long, global = true, value_name = "N")]
    position: Option<u16>,
    /// With backups: roll their log forward only up to this time, as RESTORE ... WITH STOPAT
    /// does: transactions committed by then are read, the others are not ("YYYY-MM-DD
    /// HH:MM:SS[.fff]"; default: the end of the log given). `log`, `studio` and `read-split`
    /// refuse it and the options below
    #[arg(long, global = true, value_name = "TIME")]
    stopat: Option<String>,
    /// With backups: roll their log forward up to the marked transaction NAME, included (as
    /// RESTORE ... WITH STOPATMARK)
    #[arg(long, global = true, value_name = "NAME", conflicts_with_all = ["stopat", "stopbeforemark"])]
    stopatmark: Option<String>,
    /// With backups: roll their log forward up to the marked transaction NAME, not included
    #[arg(long, global = true, value_name = "NAME", conflicts_with = "stopat")]
    stopbeforemark: Option<String>,
    /// With --stopatmark / --stopbeforemark: the first mark of that name that began at or after
    /// this time ("YYYY-MM-DD HH:MM:SS")
    #[arg(long, global = true, value_name = "TIME")]
    after: Option<String>,
    /// With backups: roll their log forward up to the log record at this LSN, included (as
    /// RESTORE ... WITH STOPATMARK = 'lsn:N'): 25000000016300001 as RESTORE HEADERONLY prints
    /// it, 0x00000019:000000a3:0001 as fn_dump_dblog and `mdfkit log` print it, or 25:163:1.
    /// `--stopbeforemark lsn:N` stops just before that record
    #[arg(long, global = true, value_name = "LSN", conflicts_with_all = ["stopat", "stopatmark", "stopbeforemark"])]
    stopatlsn: Option<String>,
    /// With s3:// or az:// URLs: the server to use instead of the cloud's own, e.g.
    /// http://127.0.0.1:7070 for an S3-compatible server (also AWS_ENDPOINT_URL /
    /// AZURE_STORAGE_ENDPOINT)
    #[arg(long, global = true, value_name = "URL")]
    endpoint: Option<String>,
    /// After the command, print on stderr the bytes fetched from each remote object against its size
    #[arg(long, global = true)]
    fetch_report: bool,
    /// With remote files: bytes per ranged GET of a scan [default: 256K]
    #[arg(long, global = true, value_name = "SIZE", value_parser = transfer::parse_size)]
    read_range: Option<u64>,
    /// With remote files: bytes a scan reads ahead at most [default: 2M]; read-ahead / range =
    /// GETs in flight (`mdfkit bench transfer` measures what a link wants)
    #[arg(long, global = true, value_name = "SIZE", value_parser = transfer::parse_size)]
    read_ahead: Option<u64>,
}

#[derive(Args)]
struct Files {
    /// The database's data files (the .mdf and any .ndf, in any order), or a backup and its
    /// stripes; each may be a URL (s3://bucket/key, az://container/blob)
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// The backup sets in a backup file, like RESTORE HEADERONLY
    #[command(
        after_help = "Examples:\n  mdfkit backups shop.bak\n  mdfkit backups stripe1.bak stripe2.bak --format json\n  \
        mdfkit backups full.bak diff.bak log1.trn log2.trn --plan\n  \
        mdfkit backups full.bak log1.trn DB_log.ldf --plan   the log file (.ldf) as the chain's tail\n\n\
        Lists each set's position, type (full / differential / log), database, start and finish,\n\
        size, LSNs, compression, checksums and stripes. `--position N` on any other command reads\n\
        that set; without it they read the latest full database backup with the latest\n\
        differential based on it. `--plan` shows that restore plan: the full, the differential,\n\
        the log backups in LSN order (rolled forward up to --stopat), any log gap, and the sets\n\
        skipped and why. A transaction log file (.ldf) given with them is the chain's tail, as a\n\
        tail-log backup would copy it: its records from where the backups' log ends are rolled\n\
        forward too, by every command; the plan's `tail` row says how many and from which LSN, or\n\
        names the log missing between the backups and the file."
    )]
    Backups {
        /// The backup files: stripes, full, differential and log backups, in any order; a
        /// transaction log file (.ldf) as the chain's tail
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Show the restore plan instead of every set
        #[arg(long)]
        plan: bool,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// The transaction log records of backups and log files (.ldf), like fn_dump_dblog
    #[command(
        after_help = "Examples:\n  mdfkit log db_1.trn db_2.trn\n  mdfkit log full.bak *.trn --table dbo.Orders --operation LOP_DELETE_ROWS\n  \
        mdfkit log full.bak db_log.ldf --changes dbo.Orders   the log file of a detached or crashed database\n  \
        mdfkit log full.bak log.trn --transaction 0000:00000287 --format json\n  \
        mdfkit log full.bak log.trn --from \"2017-06-01 13:00:00\" --to \"2017-06-01 13:05:00\"\n  \
        mdfkit log full.bak diff.bak *.trn --changes dbo.Orders   inserted and deleted rows, decoded\n\n\
        Lists the records of the log portion of full and differential backups, of log backups and\n\
        of transaction log files (.ldf: every virtual log file's blocks up to where an earlier pass\n\
        over it starts), in LSN order (a record in two of the files is listed once): LSN, operation (LOP_*),\n\
        context (LCX_*), transaction id and name, begin / end time, page, slot, partition id and,\n\
        where a full backup is among the files, the table it belongs to, and a description of what\n\
        it changes where known (LOP_COUNT_DELTA: a system table's cached counts, `sys.sysrowsets\n\
        rcrows +135`). --from / --to keep the records of transactions that began in that time\n\
        (those whose LOP_BEGIN_XACT the files hold)."
    )]
    Log {
        /// Backup files (full, differential, log) and log files (.ldf) of one database, in any order
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Instead of the records: this table's inserted and deleted rows, decoded into its
        /// columns, with their transaction (needs a full backup among the files)
        #[arg(long, value_name = "TABLE")]
        changes: Option<String>,
        /// Only records on pages of this table (needs a full backup among the files)
        #[arg(long)]
        table: Option<String>,
        /// Only this transaction (0000:00000287, as fn_dblog shows it)
        #[arg(long)]
        transaction: Option<String>,
        /// Only these operations (LOP_INSERT_ROWS, ...; repeat or separate with commas)
        #[arg(long)]
        operation: Vec<String>,
        /// Only transactions that began at or after this time (YYYY-MM-DD HH:MM:SS)
        #[arg(long)]
        from: Option<String>,
        /// Only transactions that began at or before this time
        #[arg(long)]
        to: Option<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Database name, versions, collation, options, files and page counts
    #[command(after_help = "Example:\n  mdfkit info AdventureWorksLT2012_Data.mdf")]
    Info {
        #[command(flatten)]
        files: Files,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Every user table with its layout, row count and size (rows counted on the pages a chain's
    /// log changed)
    #[command(after_help = "Examples:\n  mdfkit tables shop.mdf\n  mdfkit tables shop.mdf --system --format json")]
    Tables {
        #[command(flatten)]
        files: Files,
        /// Also list the system base tables (sysschobjs, syscolpars, ...) and internal tables
        #[arg(long)]
        system: bool,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Table definitions as T-SQL: columns, types, identity, defaults, keys and indexes
    #[command(
        after_help = "Examples:\n  mdfkit schema shop.mdf                 every user table\n  mdfkit schema shop.mdf dbo.Orders      one table (the schema may be omitted)"
    )]
    Schema {
        /// The .mdf (and any .ndf) or a backup, then optionally one table name as the last argument
        #[arg(required = true, value_name = "FILE... [TABLE]")]
        args: Vec<String>,
    },
    /// Print a table's rows
    #[command(
        after_help = "Examples:\n  mdfkit cat shop.mdf dbo.Orders --limit 20\n  mdfkit cat shop.mdf Orders --columns OrderID,OrderDate --format csv > orders.csv\n  mdfkit cat shop.mdf dbo.EventLog --include-ghosts --where-page 1:300-310 --with-location\n  mdfkit cat shop.mdf dbo.Orders --where \"Qty > 5\" --limit 100\n  mdfkit cat shop.mdf dbo.Customers --where \"Name contains bob\"\n\nOn a terminal rows print as an aligned table (up to 1000 rows unless --limit says otherwise);\npiped, they stream as CSV. Ghost (deleted) records are skipped; forwarded rows are returned once."
    )]
    Cat {
        /// The .mdf (and any .ndf) or a backup, then the table name as the last argument
        #[arg(required = true, num_args = 2.., value_name = "FILE... TABLE")]
        args: Vec<String>,
        /// Stop after this many rows
        #[arg(long)]
        limit: Option<u64>,
        /// Only these columns, comma-separated, in table order
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// Output format (default: table on a terminal, csv when piped)
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// Also return ghost records (deleted rows not yet cleaned up), with a `__ghost` column
        #[arg(long)]
        include_ghosts: bool,
        /// Read past damaged pages and records, listing what was skipped on stderr; a damaged log
        /// backup is rolled forward up to its last good LSN, a striped backup with stripes
        /// missing read from those given (one thread)
        #[arg(long)]
        salvage: bool,
        /// Only rows stored on these pages: FILE:PAGE or FILE:FIRST-LAST, comma-separated
        /// (e.g. 1:153,1:200-260); the table is still scanned in order
        #[arg(long, value_name = "PAGES", value_parser = parse_page_ranges)]
        where_page: Option<PageRanges>,
        /// Add `__partition` (partition number), `__page` (FILE:PAGE) and `__slot` columns: where
        /// each row is stored
        #[arg(long)]
        with_location: bool,
        /// Only rows where one column passes one condition: "COL=VALUE", "COL<VALUE", "COL>VALUE"
        /// or "COL contains TEXT" (numbers compare as numbers, other values by their spelling,
        /// NULL never matches: the studio's filter; "[odd = name]>5" brackets a column name that
        /// holds an operator); --limit counts matches
        #[arg(long = "where", value_name = "CONDITION", value_parser = commands::parse_filter)]
        where_: Option<mdfkit::filter::Filter>,
    },
    /// Write tables to Parquet, CSV, JSON Lines or Arrow IPC files (one file per table), or Delta Lake tables
    #[command(
        after_help = "Examples:\n  mdfkit export shop.mdf --all --format parquet -o out/\n  mdfkit export shop.bak --table dbo.Orders --table dbo.Customers --format csv -o out/\n  mdfkit export shop.bak --all --format delta -o s3://lake/shop\n\nFiles are named SCHEMA.TABLE.EXT in the output folder. Parquet keeps exact types (decimal,\ntimestamps, ...) and is zstd-compressed (--compression snappy writes faster, larger files).\nTables that cannot be read (e.g. a columnstore index) are reported and skipped; the others are\nstill written, and the exit code is then 2.\n\n--format delta appends each table to the Delta Lake table SCHEMA.TABLE/ in the output folder\n(or object URL prefix), created by the first export: Parquet data files and one commit\n(_delta_log/NNNNNNNNNNNNNNNNNNNN.json) per export, timestamps in microseconds, tinyint as\nshort, uniqueidentifier as binary, time as text; each data file's statistics (per-column\nbounds and null counts) let readers skip it. Exporting again (e.g. from the next database)\nappends the next version, after another writer's checkpoint too; a table with another\nschema is refused."
    )]
    Export {
        #[command(flatten)]
        files: Files,
        /// A table to export (repeatable); `schema.` may be omitted
        #[arg(long = "table", value_name = "TABLE")]
        tables: Vec<String>,
        /// Export every user table
        #[arg(long, conflicts_with = "tables")]
        all: bool,
        /// Output format
        #[arg(long, value_enum, default_value_t = ExportFormatArg::Parquet)]
        format: ExportFormatArg,
        /// Output folder (created if missing), or an object URL prefix (s3://bucket/prefix,
        /// az://container/prefix): each table is streamed there as a multipart upload
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: PathBuf,
        /// Only these columns, comma-separated (with a single --table)
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// Decoding (and CSV/JSON formatting) threads (default: all cores); rows then come in
        /// page allocation order. 1 keeps clustered tables in key order.
        #[arg(long)]
        threads: Option<usize>,
        /// Read past damaged pages and records; what was skipped is written to
        /// SCHEMA.TABLE.EXT.skipped.csv beside the output (SCHEMA.TABLE.skipped.csv beside a
        /// Delta table; page, slot, reason); a damaged log backup is rolled forward up to its
        /// last good LSN, a striped backup with stripes missing read from those given (one thread)
        #[arg(long)]
        salvage: bool,
        /// Parquet compression: zstd (level 1), zstd:LEVEL (1-22), snappy, lz4 or none. snappy
        /// and lz4 write faster and larger files
        #[arg(long, value_name = "CODEC", default_value = "zstd")]
        compression: mdfkit::export::ParquetCompression,
        /// Parquet/Arrow unit of datetime2(7) and datetimeoffset(7): ns is exact but holds only
        /// the years 1677-2262 (other values are refused); us holds every year 0001-9999 (e.g.
        /// the 9999-12-31 sentinel) and drops the seventh fractional digit (100 ns); Delta
        /// tables always take us
        #[arg(long, value_enum, value_name = "UNIT", default_value_t = TimestampsArg::Ns)]
        timestamps: TimestampsArg,
    },
    /// Check pages, allocation and B-tree chains for damage (like DBCC CHECKDB PHYSICAL_ONLY)
    #[command(
        after_help = "Examples:\n  mdfkit check shop.mdf\n  mdfkit check shop.mdf --format json > report.json\n  mdfkit check shop.mdf --threads 1\n\nEvery allocated page is verified (checksum, address, slots, records); each table's rows are read\nback, and each nonclustered index walked from its root: every page once, keys in order, each\nrow locator (clustered key or heap RID) found in the table.\n\nOne line per problem (page, object, what), the same whatever the number of threads. Exit code: 0 clean, 1 problems found, 2 unreadable input."
    )]
    Check {
        #[command(flatten)]
        files: Files,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Threads verifying pages, rows and chains (default: all cores for local files; one for
        /// object URLs, whose read-ahead serves one reader going through the file in order best)
        #[arg(long)]
        threads: Option<usize>,
    },
    /// List pages by their headers (for recovery when the catalog is damaged)
    #[command(
        after_help = "Examples:\n  mdfkit pages shop.mdf --object-id 245575913\n  mdfkit pages shop.mdf --allocation-unit 72057594040549376 --type data --format csv\n\nReads every formatted page's header; needs no catalog unless --object-id is given."
    )]
    Pages {
        #[command(flatten)]
        files: Files,
        /// Pages of this table or index (object id, as in sys.objects; needs a readable catalog)
        #[arg(long)]
        object_id: Option<i32>,
        /// Pages whose header names this allocation unit
        #[arg(long)]
        allocation_unit: Option<i64>,
        /// Only pages of this type: data, index, iam, pfs, text-mix, text-tree, ...
        #[arg(long = "type")]
        page_type: Option<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// A local web studio: browse tables, rows, pages and records in the browser
    #[command(
        after_help = "Examples:\n  mdfkit studio shop.mdf --open\n  mdfkit studio shop.bak --port 8080\n  mdfkit studio monday.bak --compare tuesday.bak   # /compare: rows and pages per table, rows that differ\n\nServes on 127.0.0.1 (--host: another address, with --allow-remote; a free port unless --port),\nread-only, and prints a URL carrying a secret token: open it (or give --open); the token becomes\na cookie and leaves the address bar. Requests naming another host are refused unless\n--allow-remote. Stop with Ctrl-C."
    )]
    Studio {
        #[command(flatten)]
        files: Files,
        /// Open the URL in the default browser
        #[arg(long)]
        open: bool,
        /// Port to listen on (default: a free one)
        #[arg(long, default_value_t = 0, hide_default_value = true)]
        port: u16,
        /// Address to listen on; anything but a loopback address needs --allow-remote
        #[arg(long, default_value = "127.0.0.1")]
        host: std::net::IpAddr,
        /// Listen on a non-loopback --host and answer requests naming any host: anyone who can
        /// reach the port and has the token can read the database
        #[arg(long)]
        allow_remote: bool,
        /// Another state of the database to compare with (a backup, or data files: repeat the
        /// flag for each file; a chain is rolled forward to its end): the /compare views
        #[arg(long, value_name = "FILE")]
        compare: Vec<PathBuf>,
    },
    /// Compare two states of a database: rows and pages per table, or one table's rows that differ
    #[command(
        after_help = "Examples:\n  mdfkit compare monday.bak --with tuesday.bak\n  mdfkit compare monday.bak --with tuesday.bak --table dbo.Orders --format csv\n  mdfkit compare monday.bak --with tuesday.bak --pages\n\nWithout --table: every table of both with its rows (as each catalog records them, counted on\nthe pages a chain's log changed, as mdfkit tables does) and pages (what its IAM chains map).\nWith --table: its rows inserted, deleted and changed, matched by the clustered key (a heap's\nrows whole) as SQL Server compares keys (trailing spaces, and case under a _CI collation,\nignored); the counts go to stderr, the first --limit rows that differ to stdout, each side of a\nchanged row on its own line. With --pages: the pages whose bytes differ, with where they first\ndiffer, how many bytes, and each side's page type and owner. --stopat and the like apply to\nFILE..., the --with side is rolled forward to its end. The studio shows the same (mdfkit studio FILE --compare OTHER)."
    )]
    Compare {
        #[command(flatten)]
        files: Files,
        /// The other state: a backup or data files (repeat the flag for each file)
        #[arg(long = "with", required = true, value_name = "FILE")]
        with: Vec<PathBuf>,
        /// Compare this table's rows (refused over 5,000,000 rows: one side's rows are held in
        /// memory, about 40 bytes each)
        #[arg(long, conflicts_with = "pages")]
        table: Option<String>,
        /// List the pages whose bytes differ (or that one side holds and the other does not),
        /// in page order, with each side's page type and owner
        #[arg(long)]
        pages: bool,
        /// With --pages: list the pages that differ after this one (FILE:PAGE), as the end of
        /// the previous listing says
        #[arg(long, value_name = "FILE:PAGE", requires = "pages", value_parser = |t: &str| mdfkit::anatomy::parse_page_id(t).map_err(|e| e.to_string()))]
        after_page: Option<mdfkit::page::PageId>,
        /// Rows (or pages) that differ listed (the row counts are complete)
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// With --table: list the rows that differ after this one (other:FILE:PAGE:SLOT, or
        /// this:FILE:PAGE:SLOT among deleted rows), as the end of the previous listing says
        #[arg(long, value_name = "CURSOR", requires = "table")]
        after_row: Option<mdfkit::compare::After>,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Every page and offset where a value's stored bytes occur, allocated or not
    #[command(
        after_help = "Examples:\n  mdfkit search shop.mdf --type int --value 104999\n  mdfkit search shop.bak --type nvarchar --value 'Maria Anders' --format csv\n  mdfkit search shop.mdf --type uniqueidentifier --value 00112233-4455-6677-8899-AABBCCDDEEFF\n\nThe value becomes the bytes SQL Server stores for it (integers little endian, nvarchar as UTF-16,\nvarchar as ASCII, binary as 0x hex, uniqueidentifier in its mixed byte order), then every page of\nthe files is searched, in use or not: deleted rows stay on their pages until overwritten.\nEach hit is printed with its page's type and allocation unit (see mdfkit page FILE PAGE)."
    )]
    Search {
        #[command(flatten)]
        files: Files,
        /// SQL type of the value: tinyint, smallint, int, bigint, char, varchar, nchar, nvarchar,
        /// binary, varbinary, uniqueidentifier
        #[arg(long = "type")]
        sql_type: String,
        /// The value, as SQL Server spells it (0x... for binary)
        #[arg(long)]
        value: String,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// One page taken apart: header fields, slots, each record's parts and column values
    #[command(
        after_help = "Examples:\n  mdfkit page shop.mdf 1:153\n  mdfkit page shop.bak 1:153 --format json\n\nPrinted the way DBCC PAGE (db, 1, 153, 3) prints a page, each field with its offset and\nlength; the page's verdict (checksum ok / mismatch / torn) first. A damaged page is still shown.\nIndex pages (nonclustered indexes, a clustered index's upper levels, compressed or not): each\nrecord's key and other columns decoded (HEAP RID, UNIQUIFIER where no table column), and the\ndown page of a non-leaf record."
    )]
    Page {
        /// The .mdf (and any .ndf) or backup, then the page as FILE:PAGE (e.g. 1:153)
        #[arg(required = true, num_args = 2.., value_name = "FILE... PAGE")]
        args: Vec<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = commands::PageFormat::Text)]
        format: commands::PageFormat,
    },
    /// Decode a table's records with a schema you declare (when the catalog is damaged)
    #[command(
        after_help = "Example:\n  mdfkit decode shop.mdf --allocation-unit 72057594040549376 \\\n      --columns \"id int, name varchar(50), price decimal(10,2), created datetime\"\n\nColumns in declaration order, for a table created with them and never altered. Data pages\nare found by the allocation unit id in their headers (see `mdfkit pages`); damaged pages and\nrecords are skipped and listed on stderr."
    )]
    Decode {
        #[command(flatten)]
        files: Files,
        /// The allocation unit whose data pages to decode
        #[arg(long)]
        allocation_unit: i64,
        /// The table's columns: `name type, name type, ...`
        #[arg(long)]
        columns: String,
        /// Also return ghost (deleted) records, with a `__ghost` column
        #[arg(long)]
        include_ghosts: bool,
        /// Output format (default: table on a terminal, csv when piped)
        #[arg(long, value_enum)]
        format: Option<Format>,
    },
    /// Build the sample database (a small shop: heap, clustered, LOB, ROW/PAGE compressed, the
    /// common types) and show what mdfkit reads
    #[command(after_help = "Examples:\n  mdfkit demo\n  mdfkit demo --dir /tmp/shop\n\n\
        Writes shop.mdf (SQL Server 2019 format: a heap, clustered tables, LOB and row-overflow\n\
        data, about 70,000 rows; one table three times: uncompressed, ROW and PAGE compressed)\n\
        with mdfkit-forge, then runs info and tables on it, shows the three copies' pages side by\n\
        side and that they read the same rows, runs schema and exports dbo.Orders to Parquet.\n\
        Needs no SQL Server and no sample files.")]
    Demo {
        /// Where to write the database and the export (default: a folder in the temp directory)
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// A time-limited link to one object: S3 presigned URL, Azure SAS or CloudFront signed URL
    #[command(after_help = "Examples:\n  \
        mdfkit share s3://backups/prod.bak --expires 1h\n  \
        mdfkit share az://backups/prod.bak --expires 2d --ip 203.0.113.0/24 --start 2026-01-31T08:00:00Z\n  \
        mdfkit share https://d111111abcdef8.cloudfront.net/exports/orders.parquet --expires 12h \\\n      \
        --cloudfront-key-pair-id K2JCJMDEHXQW5F --cloudfront-private-key cf.pem --ip 198.51.100.7\n\n\
        Prints the link; whoever has it can GET the object until it expires, with no credentials.\n\
        Nothing is sent to the service: the link is signed locally.\n\n\
        s3://        SigV4 presigned GET with your AWS key: at most 7 days; S3 links cannot carry\n\
        \x20            --ip or --start (use a bucket policy, or CloudFront).\n\
        az://        service SAS, read only, signed with AZURE_STORAGE_ACCOUNT_KEY; --ip takes an\n\
        \x20            IPv4 address or CIDR block; HTTPS only unless --endpoint is plain HTTP.\n\
        https://     CloudFront signed URL with a custom policy (RSA-SHA1 with the key pair's PEM\n\
        \x20            private key): --ip takes an IPv4/IPv6 CIDR block, --resource a pattern with\n\
        \x20            * and ? wildcards (default: the URL itself).")]
    Share {
        /// The object: s3://bucket/key, az://container/blob, or its https:// CloudFront URL
        #[arg(value_name = "URL")]
        url: String,
        /// How long the link works: seconds, or with a unit: 90s, 30m, 1h, 7d
        #[arg(long, value_name = "DURATION")]
        expires: String,
        /// Only clients in this address or CIDR block may use the link (Azure, CloudFront)
        #[arg(long, value_name = "CIDR")]
        ip: Option<String>,
        /// The link does not work before this UTC time: 2026-01-31T08:00:00Z (Azure, CloudFront)
        #[arg(long, value_name = "TIME")]
        start: Option<String>,
        /// CloudFront: the id of the public key in the distribution's trusted key group
        #[arg(long, value_name = "ID", requires = "cloudfront_private_key")]
        cloudfront_key_pair_id: Option<String>,
        /// CloudFront: the PEM file of the key pair's private key
        #[arg(long, value_name = "FILE", requires = "cloudfront_key_pair_id")]
        cloudfront_private_key: Option<PathBuf>,
        /// CloudFront: the URL pattern the link opens, with * and ? wildcards (default: the URL)
        #[arg(long, value_name = "PATTERN", requires = "cloudfront_key_pair_id")]
        resource: Option<String>,
    },
    /// Delete an object, or with --recursive every object under a prefix
    #[command(after_help = "Examples:\n  \
        mdfkit rm s3://lake/exports/orders.parquet\n  \
        mdfkit rm s3://lake/exports/2025 --recursive --dry-run     list what would go\n  \
        mdfkit rm az://backups/old --recursive\n\n\
        A prefix is taken as a folder: s3://lake/exports/2025 covers exports/2025/... but not\n\
        exports/2025-old. Deletes are batched: S3 DeleteObjects with 1,000 keys a request, Azure\n\
        blob batch with 256 a request, 20 requests in flight. Prints how many objects were deleted;\n\
        each key that could not be deleted is named on stderr and the exit code is then 1.")]
    Rm {
        /// The object, or with --recursive the prefix: s3://bucket/key, az://container/prefix
        #[arg(value_name = "URL")]
        url: String,
        /// Delete every object under the prefix
        #[arg(long, short = 'r')]
        recursive: bool,
        /// Only list what would be deleted
        #[arg(long)]
        dry_run: bool,
    },
    /// A catalog view such as sys.columns, rebuilt from the base tables
    #[command(
        after_help = "Views: sys.schemas, sys.objects, sys.tables, sys.views, sys.columns, sys.types,\n  sys.indexes, sys.index_columns, sys.partitions, sys.allocation_units,\n  sys.system_internals_allocation_units, sys.system_internals_partitions,\n  sys.system_internals_partition_columns, sys.database_files, sys.filegroups,\n  sys.sql_modules, sys.foreign_keys, sys.default_constraints, sys.check_constraints,\n  and any system base table (sys.sysschobjs, sys.syscolpars, ...).\n\nExamples:\n  mdfkit sys shop.mdf sys.columns\n  mdfkit sys shop.mdf sys.objects --format jsonl | jq .name"
    )]
    Sys {
        /// The .mdf (and any .ndf) or a backup, then the view name as the last argument
        #[arg(required = true, num_args = 2.., value_name = "FILE... VIEW")]
        args: Vec<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
    },
    /// Copy a file or object between local paths, s3:// and az://, verified by SHA-256
    #[command(after_help = "Examples:\n  mdfkit cp prod.bak s3://backups/2026/prod.bak\n  \
        mdfkit cp s3://backups/2026/prod.bak az://restore/ --concurrency 64\n  \
        mdfkit cp --recursive s3://lake/orders/ /data/orders/\n  \
        mdfkit cp --verify-only prod.bak s3://backups/2026/prod.bak\n\n\
        Objects are read by ranged GETs, many in flight, and written as multipart uploads; local\n\
        files are read and written unbuffered (O_DIRECT, two buffers in turn) so the page cache is\n\
        left alone. The SHA-256 of the bytes read from the source is compared with the SHA-256 of\n\
        the destination read back; both are printed. A difference is an error (exit code 2).\n\
        A destination ending in / (or an existing folder) receives the file under its own name.\n\
        --endpoint applies to both sides: between two servers, give each its own with\n\
        AWS_ENDPOINT_URL and AZURE_STORAGE_ENDPOINT.")]
    Cp {
        /// The file or object to copy (with --recursive: a folder or prefix)
        source: String,
        /// Where to copy it: a path, s3://bucket/key or az://container/blob
        destination: String,
        /// Copy every file under SOURCE, keeping paths relative to it
        #[arg(short, long)]
        recursive: bool,
        /// Requests in flight per object: ranged GETs reading, upload parts writing (with
        /// --recursive, shared by the files in flight)
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        /// Bytes per ranged GET and per local read or write: 1M, 8M, 64M, ...
        #[arg(long, default_value = "8M", value_parser = transfer::parse_size)]
        range_size: u64,
        /// Bytes per upload part, at least 5M [default: 8M, larger when an object would need over 8,000]
        #[arg(long, value_parser = transfer::parse_size)]
        part_size: Option<u64>,
        /// Files copied at once with --recursive
        #[arg(long, default_value_t = 8)]
        files_in_flight: usize,
        /// Use the page cache for local files (no O_DIRECT)
        #[arg(long)]
        buffered: bool,
        /// Copy nothing: compare the SHA-256 of SOURCE and DESTINATION
        #[arg(long, conflicts_with = "recursive")]
        verify_only: bool,
    },
    /// A table's scan cut into independent splits, one JSON object a line (for `read-split`)
    #[command(after_help = "Examples:\n  mdfkit splits shop.mdf --table dbo.Orders --target-bytes 67108864\n  \
        mdfkit splits s3://bk/prod.bak --table dbo.Orders --columns OrderID,Freight --timestamps us\n  \
        mdfkit splits shop.mdf --table dbo.Orders | head -1 | mdfkit read-split > part0.arrow\n\n\
        Each split names the database's files (local paths made absolute), the table, and runs of\n\
        its pages: about --target-bytes of pages each. Together they return every row once. The\n\
        JVM Spark data source (jvm/) plans with this on the driver and reads each split with\n\
        `read-split` on its executors.")]
    Splits {
        #[command(flatten)]
        files: Files,
        /// The table, schema.name
        #[arg(long)]
        table: String,
        /// Only these columns, comma-separated
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// Bytes of pages per split
        #[arg(long, default_value_t = 256 << 20)]
        target_bytes: u64,
        /// Unit of datetime2(7) / datetimeoffset(7) values
        #[arg(long, value_enum, default_value_t = TimestampsArg::Ns)]
        timestamps: TimestampsArg,
        /// Skip damaged pages and records (the reader lists them on stderr) instead of failing
        #[arg(long)]
        salvage: bool,
    },
    /// The rows of one split (its JSON on stdin, from `splits`) as an Arrow IPC stream on stdout
    #[command(
        after_help = "Examples:\n  mdfkit splits shop.mdf --table dbo.Orders | sed -n 2p | mdfkit read-split > part1.arrow\n  \
        mdfkit read-split --spark-types --schema-only < split.json > schema.arrow\n\n\
        A damaged page fails the read (exit code 2) with the file, table and page named on stderr;\n\
        a split planned with --salvage skips it and lists what it skipped on stderr instead."
    )]
    ReadSplit {
        /// Cast to the types Spark and Delta Lake hold: tinyint as smallint, timestamps in
        /// microseconds, time as text, binary(n) and uniqueidentifier as binary
        #[arg(long)]
        spark_types: bool,
        /// Write the schema only (a stream with no batches)
        #[arg(long)]
        schema_only: bool,
        /// Rows per Arrow batch
        #[arg(long, default_value_t = 65_536)]
        batch_size: usize,
        /// Write the stream to the Unix socket listening at PATH instead of stdout (the JVM data
        /// source reads it there straight into its Arrow buffers, a copy fewer than a pipe)
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Measurements of the machine's links
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// GET and PUT throughput to an object store by object size and requests in flight
    #[command(after_help = "Examples:\n  mdfkit bench transfer s3://scratch/bench\n  \
        mdfkit bench transfer az://scratch/ --sizes 64K,16M --concurrency 1,8,64 --chart link.png\n\n\
        Uploads a few test objects of each size under a fresh prefix below URL, then for each\n\
        size and concurrency runs that many GETs (and then PUTs) back to back for --duration\n\
        seconds. Prints MB/s and requests/s per cell and the range size / concurrency for reads\n\
        and the part size / parts in flight for writes that come near the best; --chart draws\n\
        throughput against concurrency, one line per operation and size. Every test object is deleted.")]
    Transfer {
        /// Where to put the test objects: s3://bucket/prefix or az://container/prefix
        url: String,
        /// Object sizes, comma-separated
        #[arg(long, value_delimiter = ',', default_value = "1K,64K,1M,16M", value_parser = transfer::parse_size)]
        sizes: Vec<u64>,
        /// Requests in flight to try, comma-separated
        #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,256")]
        concurrency: Vec<usize>,
        /// Seconds each measurement runs
        #[arg(long, default_value_t = 2.0)]
        duration: f64,
        /// Distinct objects uploaded per size
        #[arg(long, default_value_t = 16)]
        objects: usize,
        /// Write a PNG chart of GET and PUT throughput here
        #[arg(long, value_name = "FILE.png")]
        chart: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TimestampsArg {
    /// Nanoseconds: exact, years 1677-2262
    Ns,
    /// Microseconds: every year, the 100 ns digit dropped
    Us,
}

impl From<TimestampsArg> for mdfkit::TimestampUnit {
    fn from(t: TimestampsArg) -> Self {
        match t {
            TimestampsArg::Ns => mdfkit::TimestampUnit::Nanosecond,
            TimestampsArg::Us => mdfkit::TimestampUnit::Microsecond,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ExportFormatArg {
    /// Apache Parquet, zstd-compressed
    Parquet,
    /// CSV with a header row
    Csv,
    /// JSON Lines: one object per row
    Jsonl,
    /// Arrow IPC stream
    Arrow,
    /// Delta Lake table (Parquet files and a transaction log), appended to
    Delta,
}

impl ExportFormatArg {
    /// The file format of a one-file-per-table export; `None` for Delta tables.
    fn file_format(self) -> Option<mdfkit::export::ExportFormat> {
        use mdfkit::export::ExportFormat;
        match self {
            ExportFormatArg::Parquet => Some(ExportFormat::Parquet),
            ExportFormatArg::Csv => Some(ExportFormat::Csv),
            ExportFormatArg::Jsonl => Some(ExportFormat::Jsonl),
            ExportFormatArg::Arrow => Some(ExportFormat::Arrow),
            ExportFormatArg::Delta => None,
        }
    }
}

/// Fixes glibc's mmap threshold at 2 MiB (see Cargo.toml: otherwise peak memory grows with the
/// size of LOB tables exported), and its trim threshold at 32 MiB: a fixed mmap threshold also
/// fixes the trim threshold at its 128 KiB default, so each batch's buffers freed at the heap's
/// top went back to the kernel and the next batch faulted them in afresh (Fact's scan on one
/// thread 0.39 -> 0.35 CPU s, from its .bak 0.45 -> 0.36; Parquet unchanged; 0-11 MB more peak
/// memory: docs/PERFORMANCE.md, 2026-11-27). scripts/fuzz.sh runs the fuzz targets under the same
/// settings (`GLIBC_TUNABLES`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_large_buffers_out_of_the_heap() {
    // SAFETY: mallopt only changes allocator tuning; it is called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 2 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 32 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_large_buffers_out_of_the_heap() {}

/// The stop point `--stopat`, `--stopatmark`, `--stopbeforemark` (with `--after`) or
/// `--stopatlsn` gives.
fn stop_point(cli: &Cli) -> Result<Option<mdfkit::log::redo::StopPoint>, String> {
    mdfkit::log::redo::StopPoint::from_options(
        cli.stopat.as_deref(),
        cli.stopatmark.as_deref(),
        cli.stopbeforemark.as_deref(),
        cli.after.as_deref(),
        cli.stopatlsn.as_deref(),
    )
    .map_err(|e| e.to_string())
}

/// Why `command` refuses `--stopat` and the like, where it would otherwise ignore them.
fn refuses_stop_point(command: &Command) -> Option<&'static str> {
    match command {
        Command::Log { .. } => {
            Some("log lists the records of the log given, whatever the stop point: --from and --to choose which")
        }
        Command::Studio { .. } => {
            Some("the studio reads a chain to its end: --stopat and the like are not taken there yet")
        }
        Command::ReadSplit { .. } => {
            Some("read-split reads at the stop point its split carries: give --stopat and the like to splits")
        }
        _ => None,
    }
}

fn main() -> ExitCode {
    keep_large_buffers_out_of_the_heap();
    // Every file argument may be an object URL.
    mdfkit_cloud::register();
    let cli = Cli::parse();
    let position = cli.position;
    if cli.endpoint.is_some() || cli.read_range.is_some() || cli.read_ahead.is_some() {
        mdfkit_cloud::configure(mdfkit_cloud::CloudOptions {
            endpoint: cli.endpoint.clone(),
            read_range: cli.read_range,
            read_ahead: cli.read_ahead,
        });
    }
    let fetch_report = cli.fetch_report;
    match stop_point(&cli).and_then(|stop| match (stop, refuses_stop_point(&cli.command)) {
        (Some(_), Some(why)) => Err(why.to_string()),
        (stop, _) => Ok(stop),
    }) {
        Ok(Some(stop)) => chain::set_stop_point(stop),
        Ok(None) => {}
        Err(e) => {
            eprintln!("mdfkit: {e}");
            return ExitCode::from(2);
        }
    }
    let result = match cli.command {
        Command::Backups { files, plan, format } => chain::backups(&files, position, plan, format),
        Command::Log { files, changes, table, transaction, operation, from, to, format } => {
            let args = commands::LogArgs {
                changes: changes.as_deref(),
                table: table.as_deref(),
                transaction: transaction.as_deref(),
                operations: &operation,
                from: from.as_deref(),
                to: to.as_deref(),
            };
            commands::log(&files, &args, format)
        }
        Command::Info { files, format } => commands::info(&files.files, position, format),
        Command::Tables { files, system, format } => commands::tables(&files.files, position, system, format),
        Command::Schema { args } => commands::schema(&args, position),
        Command::Pages { files, object_id, allocation_unit, page_type, format } => {
            commands::pages(&files.files, position, object_id, allocation_unit, page_type.as_deref(), format)
        }
        Command::Studio { files, open, port, host, allow_remote, compare } => {
            commands::studio(&files.files, position, open, host, port, allow_remote, &compare)
        }
        Command::Compare { files, with, table, pages, after_page, after_row, limit, format } => {
            let listing = match (table.as_deref(), pages) {
                (Some(table), _) => commands::CompareListing::Rows { table, after: after_row },
                (None, true) => commands::CompareListing::Pages { after: after_page },
                (None, false) => commands::CompareListing::Tables,
            };
            commands::compare(&files.files, position, &with, listing, limit, format)
        }
        Command::Search { files, sql_type, value, format } => {
            commands::search(&files.files, position, &sql_type, &value, format)
        }
        Command::Page { args, format } => {
            let (files, page) = args.split_at(args.len() - 1);
            let files: Vec<PathBuf> = files.iter().map(PathBuf::from).collect();
            commands::page(&files, position, &page[0], format)
        }
        Command::Decode { files, allocation_unit, columns, include_ghosts, format } => {
            commands::decode(&files.files, position, allocation_unit, &columns, include_ghosts, format)
        }
        Command::Check { files, format, threads } => {
            let remote =
                files.files.iter().any(|f| f.to_str().is_some_and(|f| mdfkit::location::url_scheme(f).is_some()));
            let default_threads = if remote { 1 } else { mdfkit::export::all_cores() };
            commands::check(&files.files, position, format, threads.unwrap_or(default_threads))
        }
        Command::Sys { args, format } => commands::sys(&args, position, format),
        Command::Demo { dir } => commands::demo(dir),
        Command::Splits { files, table, columns, target_bytes, timestamps, salvage } => {
            let plan =
                commands::SplitPlan { table: &table, columns, target_bytes, timestamps: timestamps.into(), salvage };
            commands::splits(&files.files, position, &plan)
        }
        Command::ReadSplit { spark_types, schema_only, batch_size, socket } => {
            commands::read_split(&commands::SplitRead { spark_types, schema_only, batch_size, socket })
        }
        Command::Export { files, tables, all, format, output, columns, threads, salvage, compression, timestamps } => {
            let options = mdfkit::export::ExportOptions {
                columns,
                threads: threads.unwrap_or_else(mdfkit::export::all_cores),
                salvage,
                compression,
                timestamps: timestamps.into(),
            };
            commands::export(&files.files, position, &tables, all, format.file_format(), &output, &options)
        }
        Command::Share { url, expires, ip, start, cloudfront_key_pair_id, cloudfront_private_key, resource } => {
            let cloudfront = cloudfront_key_pair_id.zip(cloudfront_private_key);
            commands::share(&url, &expires, ip, start.as_deref(), cloudfront, resource)
        }
        Command::Rm { url, recursive, dry_run } => commands::rm(&url, recursive, dry_run),
        Command::Cp {
            source,
            destination,
            recursive,
            concurrency,
            range_size,
            part_size,
            files_in_flight,
            buffered,
            verify_only,
        } => transfer::cp(&transfer::CpRequest {
            source: &source,
            destination: &destination,
            recursive,
            verify_only,
            options: mdfkit_cloud::copy::CopyOptions {
                range_size: usize::try_from(range_size).unwrap_or(usize::MAX),
                concurrency,
                part_size: part_size.map(|p| usize::try_from(p).unwrap_or(usize::MAX)),
                files_in_flight,
                direct_io: !buffered,
            },
        }),
        Command::Bench(BenchCommand::Transfer { url, sizes, concurrency, duration, objects, chart }) => {
            transfer::bench_transfer(&transfer::BenchRequest {
                url: &url,
                options: mdfkit_cloud::bench::BenchOptions {
                    sizes,
                    concurrency,
                    duration: std::time::Duration::from_secs_f64(duration.clamp(0.01, 3600.0)),
                    objects_per_size: objects,
                },
                chart: chart.as_deref(),
            })
        }
        Command::Cat { args, limit, columns, format, include_ghosts, salvage, where_page, with_location, where_ } => {
            let forensics = commands::CatForensics { include_ghosts, where_page, with_location, filter: where_ };
            commands::cat(&args, position, limit, columns.as_deref(), format, forensics, salvage)
        }
    };
    if fetch_report {
        commands::report_fetches();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(commands::Failure::Library(e)) => {
            eprintln!("mdfkit: {e}");
            ExitCode::from(if e.kind().is_bad_input() { 2 } else { 1 })
        }
        Err(commands::Failure::Partial) => ExitCode::from(2),
        Err(commands::Failure::ProblemsFound) => ExitCode::from(1),
        Err(commands::Failure::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(commands::Failure::Output(e)) => {
            eprintln!("mdfkit: cannot write output: {e}");
            ExitCode::from(1)
        }
    }
}
