//! T-SQL for a table's definition, as a DBA would write it.

use super::model::{compression_name, TableInfo};
use super::Catalog;

fn quote(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

/// ` WITH (DATA_COMPRESSION = ROW)` when every partition of the table's heap or clustered index is
/// compressed alike; with partitions that differ, one `DATA_COMPRESSION = ... ON PARTITIONS (...)`
/// per compressed setting; empty when nothing is compressed (columnstore is an index of its own).
fn compression_clause(t: &TableInfo) -> String {
    let mut settings: Vec<(u8, Vec<i32>)> = Vec::new();
    for p in &t.partitions {
        match settings.iter_mut().find(|(level, _)| *level == p.data_compression) {
            Some((_, numbers)) => numbers.push(p.partition_number),
            None => settings.push((p.data_compression, vec![p.partition_number])),
        }
    }
    let compressed: Vec<&(u8, Vec<i32>)> = settings.iter().filter(|(level, _)| matches!(level, 1 | 2)).collect();
    match compressed.as_slice() {
        [] => String::new(),
        [(level, _)] if settings.len() == 1 => format!(" WITH (DATA_COMPRESSION = {})", compression_name(*level)),
        _ => {
            let parts: Vec<String> = compressed
                .iter()
                .map(|(level, numbers)| {
                    let numbers: Vec<String> = numbers.iter().map(i32::to_string).collect();
                    format!("DATA_COMPRESSION = {} ON PARTITIONS ({})", compression_name(*level), numbers.join(", "))
                })
                .collect();
            format!(" WITH ({})", parts.join(", "))
        }
    }
}

impl Catalog {
    /// The table as T-SQL: CREATE TABLE with its columns and key constraints (and its data
    /// compression), then its other indexes. Alias types are named as declared; computed columns show their definition.
    pub fn create_table_sql(&self, t: &TableInfo) -> String {
        let catalog = self;
        let qualified = format!("{}.{}", quote(&t.schema), quote(&t.name));
        let mut lines = Vec::new();
        let defaults: Vec<(i64, String, i64)> = catalog
            .rows_where("sysschobjs", "pid", i64::from(t.object_id))
            .into_iter()
            .filter(|o| o.text("type").trim() == "D")
            .map(|o| (o.int("id"), o.text("name").to_string(), o.int("intprop")))
            .collect();
        for c in catalog.columns(t.object_id) {
            if let Some(def) = &c.computed_definition {
                lines.push(format!("{} AS {def}", quote(&c.name)));
                continue;
            }
            let type_text = if c.user_type_id > 256 || c.type_name == "sysname" {
                quote(&c.type_name)
            } else {
                c.type_info.spelling()
            };
            let mut line = format!("{} {type_text}", quote(&c.name));
            if c.is_sparse {
                line.push_str(" SPARSE");
            }
            if let Some(id) = &c.identity {
                line.push_str(&format!(" IDENTITY({},{})", id.seed, id.increment));
            }
            if c.is_rowguidcol {
                line.push_str(" ROWGUIDCOL");
            }
            line.push_str(if c.is_nullable { " NULL" } else { " NOT NULL" });
            if let Some((id, name, _)) = defaults.iter().find(|d| d.2 == i64::from(c.column_id)) {
                let def = catalog.definition(*id, None).unwrap_or_else(|| "(?)".into());
                line.push_str(&format!(" CONSTRAINT {} DEFAULT {def}", quote(name)));
            }
            lines.push(line);
        }
        let indexes = catalog.indexes(t.object_id);
        let key_list = |cols: &[(String, bool)]| {
            cols.iter()
                .map(|(n, desc)| format!("{} {}", quote(n), if *desc { "DESC" } else { "ASC" }))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for i in indexes.iter().filter(|i| i.is_primary_key || i.is_unique_constraint) {
            lines.push(format!(
                "CONSTRAINT {} {} {} ({})",
                quote(&i.name),
                if i.is_primary_key { "PRIMARY KEY" } else { "UNIQUE" },
                i.type_desc(),
                key_list(&i.key_columns)
            ));
        }
        let mut sql = format!("CREATE TABLE {qualified} (\n    {}\n){};", lines.join(",\n    "), compression_clause(t));
        for i in indexes.iter().filter(|i| !(i.is_primary_key || i.is_unique_constraint)) {
            let mut stmt = format!(
                "\nCREATE {}{} INDEX {} ON {qualified} ({})",
                if i.is_unique { "UNIQUE " } else { "" },
                i.type_desc(),
                quote(&i.name),
                key_list(&i.key_columns)
            );
            if !i.included_columns.is_empty() {
                stmt.push_str(&format!(
                    " INCLUDE ({})",
                    i.included_columns.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", ")
                ));
            }
            stmt.push(';');
            sql.push_str(&stmt);
        }
        sql.push('\n');
        sql
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::model::PartitionInfo;

    fn table(levels: &[u8]) -> TableInfo {
        let partitions = levels
            .iter()
            .enumerate()
            .map(|(i, &data_compression)| PartitionInfo {
                partition_id: i as i64,
                partition_number: i as i32 + 1,
                rows: 0,
                data_compression,
                used_pages: 0,
                total_pages: 0,
            })
            .collect();
        TableInfo {
            object_id: 1,
            schema: "dbo".into(),
            name: "t".into(),
            object_type: "U".into(),
            is_ms_shipped: false,
            is_heap: true,
            partitions,
            has_lob: false,
            has_row_overflow: false,
            has_vardecimal: false,
        }
    }

    #[test]
    fn data_compression_as_create_table_writes_it() {
        assert_eq!(compression_clause(&table(&[0])), "");
        assert_eq!(compression_clause(&table(&[1])), " WITH (DATA_COMPRESSION = ROW)");
        assert_eq!(compression_clause(&table(&[2, 2])), " WITH (DATA_COMPRESSION = PAGE)");
        assert_eq!(
            compression_clause(&table(&[1, 0, 2, 1])),
            " WITH (DATA_COMPRESSION = ROW ON PARTITIONS (1, 4), DATA_COMPRESSION = PAGE ON PARTITIONS (3))"
        );
    }
}
