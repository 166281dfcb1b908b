//! The records of an index's B-tree: which column each of its rowset's columns is, and decoders
//! for its leaf and non-leaf records.
//!
//! A nonclustered index's rowset (`sys.sysrscols` of its partition) lists the columns of its leaf
//! records in order, but not which table column each one is: `sys.sysiscols` names the key
//! columns (status 0x2, key ordinal in `tinyprop1`) and the included ones (status 0x12), and has
//! no row for the row locator SQL Server adds. The rowset's columns are, in rscolid order:
//!
//! ```text
//!  unique index:      | key columns (ordkey 1..k) | included columns | row locator            |
//!  non-unique index:  | key columns (ordkey 1..k) | row locator (ordkey k+1..) | included columns |
//!
//!  row locator: the clustered key's columns the index key lacks, in clustered key order (then
//!               the uniquifier, an int, where the clustered index is not unique), or for a heap
//!               the RID: a NOT NULL binary(8) column, page (4) file (2) slot (2)
//! ```
//!
//! A non-unique index's locator is part of its key (non-zero ordkey), so it is in its non-leaf
//! records too. Non-leaf records hold the key columns (ordkey order) and then the child page.
//!
//! Sources: the corpus' own files: pubs (`itsligo-sampledbs__pubs.mdf`) `roysched.titleidind`
//! (non-unique on a heap: `title_id` ordkey 1, then a binary(8) column ordkey 2, the RID) and
//! `titles.titleind` (non-unique: `title` ordkey 1, then the clustered key `title_id` ordkey 2),
//! `sys.syscommittab.si_xdes_id` in every corpus file (unique on `xdes_id` INCLUDE `dbfragid`,
//! clustered on (`commit_ts`, `xdes_id`): `xdes_id`, `dbfragid`, then `commit_ts`); Mark S.
//! Rasmussen, "Determining the Uniquifier Column Ordinal for Clustered and Nonclustered Indexes"
//! (improve.dk, 2011: the uniquifier comes last in a nonclustered index's records, and
//! `is_uniqueifier` is not set there); danny-sg/internals-viewer (`IndexStructureProvider.cs`).
//! The order of a non-unique index's included columns after its locator is this reader's
//! assumption (no corpus file has one); a rowset that does not match these rules is refused by
//! name.
//!
//! Records in the CD format (ROW and PAGE compressed indexes) hold the rowset's columns in rscolid
//! order, a non-leaf record's child page in a column after them (`record/cd.rs`). FixedVar index
//! records ([`crate::record::Record::parse_index`]) hold them where sysrscols' offsets say: the
//! leaf offset and null bit at the leaf, the interior offset and null bit (the high halves of
//! `offset` and `nullbit`) in non-leaf records, whose child page ends their fixed part.

use std::collections::HashMap;

use crate::catalog::model::{IndexInfo, TableInfo};
use crate::catalog::rowset::PhysicalColumn;
use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::record::RecordFormat;
use crate::rows::{ColumnPlan, RowDecoder};
use crate::source::PageReader;
use crate::types::{SqlType, TypeInfo};

/// Bytes of a heap RID: page (4), file (2), slot (2).
pub const RID_SIZE: usize = 8;

/// What one column of an index's records is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexColumnRole {
    /// The n-th (from 1) column of the index's key.
    Key(usize),
    /// An included column (at the leaf only).
    Included,
    /// A clustered key column carried as the row locator.
    Locator,
    /// The uniquifier of a non-unique clustered key, carried as part of the row locator.
    Uniquifier,
    /// The heap RID of the row (page, file, slot), the row locator of an index on a heap.
    Rid,
}

/// The records of one index partition (a B-tree's rowset): each column's role, decoders for its
/// leaf and non-leaf records (of a clustered index: its key columns, for its non-leaf records).
#[derive(Clone)]
pub struct IndexRows {
    /// The index.
    pub index: IndexInfo,
    /// The rowset (partition id) the records belong to.
    pub rowset: i64,
    /// Each leaf column's role, in record order.
    pub roles: Vec<IndexColumnRole>,
    leaf: RowDecoder,
    node: RowDecoder,
}

impl IndexRows {
    /// The records of `table`'s index `index` in partition `rowset` (a sysrowsets row of the
    /// index), as `catalog` describes them. Refused when the rowset's columns do not match the
    /// index's definition (module documentation), or are FixedVar for a nonclustered index.
    pub fn new(
        catalog: &Catalog,
        reader: &PageReader,
        table: &TableInfo,
        index: &IndexInfo,
        rowset: i64,
    ) -> Result<Self> {
        let name = format!("{} index {}", table.qualified_name(), index.name);
        let bad = |why: String| Error::corrupt(why).in_object(name.clone());
        let layout = catalog
            .base()
            .layouts
            .get(&rowset)
            .ok_or_else(|| bad(format!("sys.sysrscols has no layout for partition {rowset}")))?;
        let level =
            catalog.table("sysrowsets").iter().find(|r| r.int("rowsetid") == rowset).map(|r| r.int("cmprlevel"));
        let format = RecordFormat::of_compression(level.unwrap_or(0) as u8)
            .ok_or_else(|| Error::unsupported("a columnstore index").in_object(name.clone()))?;
        let by_id = catalog.columns(table.object_id);
        let declared: HashMap<String, crate::catalog::model::ColumnInfo> =
            by_id.iter().map(|c| (c.name.to_ascii_lowercase(), c.clone())).collect();
        let column = |n: &str| declared.get(&n.to_ascii_lowercase()).cloned();
        // A clustered index's leaf records are its table's rows: only its key columns are here.
        let physical: Vec<&PhysicalColumn> =
            layout.columns.iter().filter(|c| !c.is_dropped() && (index.index_id != 1 || c.key_ordinal > 0)).collect();
        // A clustered index's rowset is its table's: each column the table column of its id.
        let roles = if index.index_id == 1 {
            physical
                .iter()
                .map(|p| match p.key_ordinal {
                    _ if p.is_uniquifier() => IndexColumnRole::Uniquifier,
                    n => IndexColumnRole::Key(n as usize),
                })
                .collect::<Vec<_>>()
        } else {
            nonclustered_roles(catalog, table, index, &physical).map_err(&bad)?
        };
        let mut leaf = Vec::new();
        let mut included = index.included_columns.iter();
        let mut locator = locator_columns(catalog, table, index).into_iter();
        for (position, (p, role)) in physical.iter().zip(&roles).enumerate() {
            let info = match role {
                IndexColumnRole::Key(_) if index.index_id == 1 => {
                    by_id.iter().find(|c| c.column_id == p.rowset_column_id).cloned()
                }
                IndexColumnRole::Key(n) => index.key_columns.get(n - 1).and_then(|(c, _)| column(c)),
                IndexColumnRole::Included => included.next().and_then(|c| column(c)),
                IndexColumnRole::Locator => locator.next().and_then(|c| column(&c)),
                IndexColumnRole::Uniquifier => Some(synthetic("UNIQUIFIER", p.type_info)),
                IndexColumnRole::Rid => Some(synthetic("HEAP RID", p.type_info)),
            };
            let Some(info) = info else {
                return Err(bad(format!("no table column for the index's column {}", p.rowset_column_id)));
            };
            if info.type_info.sql_type != p.type_info.sql_type {
                return Err(bad(format!(
                    "the index's column {} ({}) is stored as {}",
                    p.rowset_column_id,
                    info.name,
                    p.type_info.sql_type.name()
                )));
            }
            let mut physical = (*p).clone();
            if *role == IndexColumnRole::Uniquifier {
                // A nonclustered index's rowset does not flag its uniquifier (module documentation).
                physical.status |= crate::catalog::rowset::RSCOL_UNIQUIFIER;
            }
            if format == RecordFormat::Cd {
                // A CD record holds the rowset's columns in order; a compressed bit is a byte.
                physical.leaf_offset = -(position as i16) - 1;
                physical.bit_position = 0;
            }
            leaf.push(ColumnPlan::new(info, physical));
        }
        // Non-leaf records: the key columns in key order, numbered from the first CD column, or
        // where their interior offset and null bit put them in a FixedVar record.
        let mut keys: Vec<&ColumnPlan> = leaf.iter().filter(|c| c.physical.key_ordinal > 0).collect();
        keys.sort_by_key(|c| c.physical.key_ordinal);
        let node = keys
            .into_iter()
            .enumerate()
            .map(|(i, plan)| {
                let mut physical = plan.physical.clone();
                match format {
                    RecordFormat::Cd => physical.leaf_offset = -(i as i16) - 1,
                    RecordFormat::FixedVar => {
                        physical.leaf_offset = physical.internal_offset;
                        physical.null_bit = physical.internal_null_bit;
                    }
                }
                ColumnPlan::new(plan.column.clone(), physical)
            })
            .collect();
        Ok(IndexRows {
            index: index.clone(),
            rowset,
            roles,
            leaf: RowDecoder::from_plans(reader, name.clone(), leaf, format),
            node: RowDecoder::from_plans(reader, name, node, format),
        })
    }

    /// The format of the index's records: CD for a ROW or PAGE compressed index.
    pub fn format(&self) -> RecordFormat {
        self.leaf.format()
    }

    /// The decoder of the records of a page at `level` (0: the leaf).
    pub fn decoder(&self, level: u8) -> &RowDecoder {
        if level == 0 {
            &self.leaf
        } else {
            &self.node
        }
    }
}

/// The clustered key columns a nonclustered index of `table` carries as its row locator: those
/// its key lacks, in clustered key order (none for a heap).
fn locator_columns(catalog: &Catalog, table: &TableInfo, index: &IndexInfo) -> Vec<String> {
    let clustered = catalog.indexes(table.object_id).into_iter().find(|i| i.index_id == 1);
    clustered
        .map(|c| {
            c.key_columns
                .into_iter()
                .map(|(name, _)| name)
                .filter(|name| !index.key_columns.iter().any(|(k, _)| k.eq_ignore_ascii_case(name)))
                .collect()
        })
        .unwrap_or_default()
}

/// The role of each column of a nonclustered index's rowset (module documentation), or why the
/// rowset does not match the index's definition.
fn nonclustered_roles(
    catalog: &Catalog,
    table: &TableInfo,
    index: &IndexInfo,
    physical: &[&PhysicalColumn],
) -> std::result::Result<Vec<IndexColumnRole>, String> {
    let keys = index.key_columns.len();
    let locator = locator_columns(catalog, table, index).len();
    let clustered = catalog.indexes(table.object_id).into_iter().find(|i| i.index_id == 1);
    let has_uniquifier = clustered.as_ref().is_some_and(|c| !c.is_unique);
    let included = index.included_columns.len();
    let (locator_len, rid) = if table.is_heap { (1, true) } else { (locator + usize::from(has_uniquifier), false) };
    if physical.len() != keys + included + locator_len {
        return Err(format!(
            "its rowset has {} columns; {keys} key, {included} included and {locator_len} row locator columns expected",
            physical.len()
        ));
    }
    let locator_roles = (0..locator_len).map(|i| match () {
        _ if rid => IndexColumnRole::Rid,
        _ if has_uniquifier && i == locator_len - 1 => IndexColumnRole::Uniquifier,
        _ => IndexColumnRole::Locator,
    });
    let mut roles: Vec<IndexColumnRole> = (1..=keys).map(IndexColumnRole::Key).collect();
    let included_roles = std::iter::repeat_n(IndexColumnRole::Included, included);
    if index.is_unique {
        roles.extend(included_roles);
        roles.extend(locator_roles);
    } else {
        roles.extend(locator_roles);
        roles.extend(included_roles);
    }
    for (i, (p, role)) in physical.iter().zip(&roles).enumerate() {
        let key_ordinal = usize::try_from(p.key_ordinal).unwrap_or(0);
        let expected = match role {
            IndexColumnRole::Key(n) => *n,
            _ if !index.is_unique && i < keys + locator_len => i + 1,
            _ => 0,
        };
        if key_ordinal != expected {
            return Err(format!(
                "its column {} has key ordinal {key_ordinal}, {expected} expected for {role:?}",
                p.rowset_column_id
            ));
        }
        let rid_type = p.type_info.sql_type == SqlType::Binary && p.type_info.max_length == RID_SIZE as i16;
        if *role == IndexColumnRole::Rid && !rid_type {
            return Err(format!("its RID column {} is not a binary(8)", p.rowset_column_id));
        }
    }
    Ok(roles)
}

/// A column of an index's records that is no table column (the RID, a uniquifier).
fn synthetic(name: &str, type_info: TypeInfo) -> crate::catalog::model::ColumnInfo {
    let mut column = ColumnPlan::declared(0, name, type_info, 0, 0).column;
    column.is_nullable = false;
    column
}
