//! Who owns each allocation unit: its object, index, partition and kind, indexed by allocation
//! unit id and built once per catalog ([`Catalog::owners`]), so that a page's owner costs one
//! hash lookup (page views, page comparisons, value search, the allocation map).
//!
//! ```text
//!  page header (m_objId, m_indexId) ── allocation_unit_id ──► sysallocunits.auid
//!  sysallocunits.ownerid ──► sysrowsets.rowsetid (sys.partitions.partition_id)
//!  sysrowsets.idmajor = object id, idminor = index id (0 heap, 1 clustered, > 1 nonclustered),
//!  numpart = partition number
//!  sysschobjs (id, name, nsid → schema), sysidxstats (id, indid, name: sys.indexes.name)
//! ```
//!
//! The same columns `sys.allocation_units`, `sys.partitions` and `sys.indexes` are built from
//! ([`super::views`]); the page header side is [`PageHeader::allocation_unit_id`], with pages last
//! written by SQL Server 2000 naming their table instead ([`PageHeader::belongs_to`]: the unit
//! of index 0 or 1 of that object).

use std::collections::HashMap;

use super::model::TableInfo;
use super::Catalog;
use crate::page::allocation::AllocationUnit;
use crate::page::PageHeader;

/// The owner of one allocation unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitOwner {
    /// The allocation unit (`kind`: in-row, LOB or row-overflow data).
    pub unit: AllocationUnit,
    /// `sys.objects.object_id` of the table (or indexed view) the unit's index belongs to.
    pub object_id: i32,
    /// `schema.name` of that object.
    pub object: String,
    /// `sys.indexes.index_id`: 0 heap, 1 clustered index, more a nonclustered index.
    pub index_id: i32,
    /// `sys.indexes.name`; empty for a heap.
    pub index_name: String,
    /// `sys.partitions.partition_number`.
    pub partition_number: i32,
    /// `sys.partitions.partition_id` (the unit's `ownerid`).
    pub partition_id: i64,
    /// The object's position in [`UnitOwners::tables`] when it is a table.
    table: Option<usize>,
}

impl UnitOwner {
    /// The owner in one line: `dbo.T, index 2 IX_T_a, partition 1, IN_ROW_DATA`.
    pub fn describe(&self) -> String {
        format!("{}, {}", self.object, self.place())
    }

    /// Where in its object the unit lies: `index 2 IX_T_a, partition 1, IN_ROW_DATA` (`heap`
    /// for index 0).
    pub fn place(&self) -> String {
        let index = match self.index_id {
            0 => "heap".to_string(),
            id if self.index_name.is_empty() => format!("index {id}"),
            id => format!("index {id} {}", self.index_name),
        };
        format!("{index}, partition {}, {}", self.partition_number, self.unit.kind_name())
    }

    /// Whether the unit holds the table's rows themselves: its heap or clustered index.
    pub fn holds_rows(&self) -> bool {
        self.index_id <= 1
    }

    /// Whether the owning object is a table ([`UnitOwners::table`] gives it), not an indexed
    /// view or another object with rowsets.
    pub fn is_table(&self) -> bool {
        self.table.is_some()
    }
}

/// Allocation unit id → [`UnitOwner`], for every unit whose rowset the catalog lists.
#[derive(Debug, Default)]
pub struct UnitOwners {
    tables: Vec<TableInfo>,
    by_unit: HashMap<i64, UnitOwner>,
}

impl UnitOwners {
    /// Builds the index from the catalog's base tables (one pass over each).
    pub fn build(catalog: &Catalog) -> Self {
        let tables = catalog.tables(true);
        let table_at: HashMap<i32, usize> = tables.iter().enumerate().map(|(i, t)| (t.object_id, i)).collect();
        let schemas = catalog.schema_names();
        let objects: HashMap<i64, String> = catalog
            .objects()
            .iter()
            .map(|o| {
                let schema = schemas.get(&o.int("nsid")).map_or("", String::as_str);
                let name = o.text("name");
                (o.int("id"), if schema.is_empty() { name.to_string() } else { format!("{schema}.{name}") })
            })
            .collect();
        let index_names: HashMap<(i64, i64), &str> =
            catalog.table("sysidxstats").iter().map(|i| ((i.int("id"), i.int("indid")), i.text("name"))).collect();
        let rowsets: HashMap<i64, (i64, i64, i64)> = catalog
            .table("sysrowsets")
            .iter()
            .map(|r| (r.int("rowsetid"), (r.int("idmajor"), r.int("idminor"), r.int("numpart"))))
            .collect();
        let mut by_unit = HashMap::with_capacity(catalog.base().allocation_units.len());
        for unit in &catalog.base().allocation_units {
            let Some(&(object_id, index_id, partition_number)) = rowsets.get(&unit.owner_id) else { continue };
            let table = table_at.get(&(object_id as i32)).copied();
            let object = match table {
                Some(t) => tables[t].qualified_name(),
                None => objects.get(&object_id).cloned().unwrap_or_else(|| format!("object {object_id}")),
            };
            by_unit.insert(
                unit.id,
                UnitOwner {
                    unit: unit.clone(),
                    object_id: object_id as i32,
                    object,
                    index_id: index_id as i32,
                    index_name: index_names.get(&(object_id, index_id)).map_or(String::new(), |n| n.to_string()),
                    partition_number: partition_number as i32,
                    partition_id: unit.owner_id,
                    table,
                },
            );
        }
        UnitOwners { tables, by_unit }
    }

    /// The owner of allocation unit `id`.
    pub fn of_unit(&self, id: i64) -> Option<&UnitOwner> {
        self.by_unit.get(&id)
    }

    /// The owner of the page whose header is `header`: the unit its header names, or for a page
    /// last written by SQL Server 2000 (index id 0 in its header), its table's heap or clustered
    /// index unit.
    pub fn of_page(&self, header: &PageHeader) -> Option<&UnitOwner> {
        let unit = header.allocation_unit_id();
        self.of_unit(unit).or_else(|| {
            // The one unit `belongs_to` accepts besides the exact one: index 1 of the same object.
            self.of_unit(1 << 48 | unit).filter(|o| header.belongs_to(o.unit.id))
        })
    }

    /// The table `owner` belongs to, when its object is a table (user, system or internal).
    pub fn table(&self, owner: &UnitOwner) -> Option<&TableInfo> {
        owner.table.and_then(|t| self.tables.get(t))
    }

    /// Every unit's owner, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &UnitOwner> {
        self.by_unit.values()
    }
}
