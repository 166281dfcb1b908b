//! T-SQL for a table's definition, as a DBA would write it.

use super::model::TableInfo;
use super::Catalog;

fn quote(name: &str) -> String {
    format!("[{}]", name.replace(']', "]]"))
}

impl Catalog {
    /// The table as T-SQL: CREATE TABLE with its columns and key constraints, then its other
    /// indexes. Alias types are named as declared; computed columns show their definition.
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
        let mut sql = format!("CREATE TABLE {qualified} (\n    {}\n);", lines.join(",\n    "));
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
