//! The owner index ([`mdfkit::catalog::Catalog::owners`]): on every corpus data file, every page
//! an allocation unit's IAM chain maps has the owner the catalog's table list gives (the path
//! page views took before the index: the unit the header names, or for pages SQL Server 2000
//! wrote, the unit of index 0 or 1 of the object the header names; then the table one of whose
//! heap or clustered partitions owns the unit), and units of nonclustered indexes are named by
//! `sys.indexes` (the catalog's own index list).

mod common;

use mdfkit::catalog::base::AllocationUnit;
use mdfkit::catalog::model::TableInfo;
use mdfkit::page::PageHeader;
use mdfkit::Database;

/// The owner as the catalog's table list gives it, one linear search each (what `owner_of` did).
fn owner_by_table_list(db: &Database, tables: &[TableInfo], header: &PageHeader) -> Option<(String, AllocationUnit)> {
    let units = &db.catalog().base().allocation_units;
    let unit = units
        .iter()
        .find(|u| u.id == header.allocation_unit_id())
        .or_else(|| units.iter().find(|u| header.belongs_to(u.id)))?;
    let table = tables.iter().find(|t| t.partitions.iter().any(|p| p.partition_id == unit.owner_id))?;
    Some((table.qualified_name(), unit.clone()))
}

#[test]
fn every_iam_mapped_page_has_the_owner_the_table_list_gives() {
    let Some(dir) = common::corpus_dir() else { return };
    let (mut pages, mut by_table, mut of_indexes, mut sql2000_pages) = (0, 0, 0, 0);
    for row in common::manifest(&dir.join("MANIFEST.tsv")).iter().filter(|r| r.kind == "mdf") {
        let db = Database::open(&[dir.join(&row.file)]).unwrap();
        let tables = db.catalog().tables(true);
        let owners = db.catalog().owners();
        for unit in &db.catalog().base().allocation_units {
            if unit.first_iam_page.is_null() {
                continue;
            }
            let Ok(mapped) = mdfkit::scan::heap_pages(db.reader(), unit) else { continue };
            for id in mapped {
                let Ok(page) = db.reader().read(id) else { continue };
                let header = page.header();
                pages += 1;
                let new = owners.of_page(header);
                match owner_by_table_list(&db, &tables, header) {
                    Some((table, old_unit)) => {
                        let o = new.unwrap_or_else(|| {
                            panic!("{}: page {id}: no owner, the table list says {table}", row.file)
                        });
                        assert_eq!((&o.object, &o.unit), (&table, &old_unit), "{}: page {id}", row.file);
                        assert!(o.holds_rows() && o.is_table(), "{}: page {id}: {}", row.file, o.describe());
                        let t = owners.table(o).unwrap();
                        assert_eq!(t.qualified_name(), table, "{}: page {id}", row.file);
                        let partition = t.partitions.iter().find(|p| p.partition_id == o.partition_id).unwrap();
                        assert_eq!(partition.partition_number, o.partition_number, "{}: page {id}", row.file);
                        by_table += 1;
                        sql2000_pages += usize::from(header.allocation_unit_id() != o.unit.id);
                    }
                    // Pages of nonclustered indexes (and of objects that are not tables): the
                    // table list has only heaps and clustered indexes.
                    None => {
                        if let Some(o) = new {
                            assert!(!o.holds_rows() || !o.is_table(), "{}: page {id}: {}", row.file, o.describe());
                            assert_eq!(o.unit.id, header.allocation_unit_id(), "{}: page {id}", row.file);
                            if o.is_table() {
                                let index =
                                    db.catalog().indexes(o.object_id).into_iter().find(|i| i.index_id == o.index_id);
                                let index = index
                                    .unwrap_or_else(|| panic!("{}: {}: not in sys.indexes", row.file, o.describe()));
                                assert_eq!(index.name, o.index_name, "{}: page {id}", row.file);
                                of_indexes += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    println!(
        "owners: {pages} IAM-mapped pages, {by_table} owned by a heap or clustered index as the table list says \
         ({sql2000_pages} written by SQL Server 2000), {of_indexes} by nonclustered indexes named in sys.indexes"
    );
    assert!(by_table > 1000 && of_indexes > 100 && sql2000_pages > 0, "too few pages of each kind");
}

/// A forged heap (every column its key) in four states made from one seed, so that each row
/// draws the same word from each list: the words as written, in capitals, with trailing spaces,
/// and with a letter added. The forge writes text columns under SQL_Latin1_General_CP1_CI_AS:
/// SQL Server takes the first three as the same keys (case-insensitive; trailing spaces never
/// count), so those rows are changed, not deleted and inserted; the fourth's are other rows.
#[test]
fn keys_differing_only_in_case_or_trailing_spaces_under_a_ci_collation_are_one_row() {
    use mdfkit::compare::{compare_rows, Change};
    use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
    const WORDS: [&str; 5] = ["alpha", "Beta", "gamma", "delta", "Epsilon"];
    let forged = |word: &dyn Fn(&str) -> String| {
        let words = Gen::Choice(WORDS.iter().map(|w| word(w)).collect());
        let table = TableSpec::new("dbo", "H", Layout::Heap, 1000)
            .column(ColumnSpec::new("ID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
            .column(ColumnSpec::new("Name", ColType::VarChar(Some(20)), words.clone(), Nulls::Never))
            .column(ColumnSpec::new("NName", ColType::NVarChar(Some(20)), words, Nulls::Never));
        let spec = Spec::new("ci", Version::V904, 7).table(table);
        let files = mdfkit_forge::forge(&spec).unwrap().into_iter().map(|f| (f.name, f.bytes)).collect();
        Database::from_source(std::sync::Arc::new(mdfkit::source::DataFiles::from_memory(files).unwrap())).unwrap()
    };
    let written = forged(&|w| w.to_string());
    let table = written.catalog().find_table("dbo.H").unwrap();
    for c in written.catalog().columns(table.object_id).iter().filter(|c| c.name != "ID") {
        assert_eq!(mdfkit::collation::name(c.collation_id), "SQL_Latin1_General_CP1_CI_AS", "{}", c.name);
    }
    let capitals = forged(&|w| w.to_uppercase());
    let padded = forged(&|w| format!("{w}   "));
    let other = forged(&|w| format!("{w}s"));

    let same = compare_rows(&written, &written, "dbo.H", None, 10).unwrap();
    assert_eq!((same.inserted, same.deleted, same.changed, same.unchanged), (0, 0, 0, 1000));
    for second in [&capitals, &padded] {
        let c = compare_rows(&written, second, "dbo.H", None, 10).unwrap();
        assert_eq!((c.inserted, c.deleted, c.changed, c.unchanged), (0, 0, 1000, 0));
        for r in &c.rows {
            let (before, after) = (&r.before.as_ref().unwrap().1, &r.after.as_ref().unwrap().1);
            assert_eq!((r.change, &before[0]), (Change::Changed, &after[0]), "the same row, by its ID");
            let (b, a) = (before[1].to_string(), after[1].to_string());
            assert!(a == b.to_uppercase() || a == format!("{b}   "), "{b:?} -> {a:?}");
        }
    }
    // A letter added: other keys, so every row is deleted and another inserted.
    let c = compare_rows(&written, &other, "dbo.H", None, 10).unwrap();
    assert_eq!((c.inserted, c.deleted, c.changed, c.unchanged), (1000, 1000, 0, 0));
}
