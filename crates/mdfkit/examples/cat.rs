//! Prints the rows of one table as CSV, in key order (what `mdfkit cat --format csv` shows):
//!
//! ```sh
//! cargo run -p mdfkit --example cat -- db.mdf [more.ndf ...] dbo.Orders
//! cargo run -p mdfkit --example cat          # the first rows of the demo's dbo.Customers
//! ```
//!
//! With no argument it forges the demo's shop database (`mdfkit-forge`) into a temporary folder.

use std::error::Error;
use std::io::Write;
use std::path::PathBuf;

use mdfkit::export::write_csv_row;
use mdfkit::scan::Flow;
use mdfkit::Database;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout().lock();
    if args.len() < 2 {
        let dir = std::env::temp_dir().join("mdfkit-example-cat");
        let paths = mdfkit_forge::forge_to_dir(&mdfkit_forge::samples::shop(), &dir)?;
        eprintln!("no file and table given: dbo.Customers of the demo's shop database, forged into {}", dir.display());
        return cat(&paths, "dbo.Customers", Some(10), &mut out);
    }
    let table = args.pop().unwrap_or_default();
    let paths: Vec<PathBuf> = args.into_iter().map(PathBuf::from).collect();
    cat(&paths, &table, None, &mut out)
}

/// Writes a header line of column names, then the table's rows (at most `limit`) with SQL
/// Server's spellings of the values (`19.9900`, `2012-03-15 00:00:00.000`); NULL is an empty field.
fn cat(paths: &[PathBuf], name: &str, limit: Option<u64>, out: &mut impl Write) -> Result<(), Box<dyn Error>> {
    let db = Database::open(paths)?;
    let table = db.catalog().find_table(name).ok_or_else(|| format!("no table named {name}"))?;
    let mut line = String::new();
    let mut values = Vec::new();
    let mut left = limit.unwrap_or(u64::MAX);
    for (i, partition) in table.partitions.iter().enumerate() {
        if left == 0 {
            break;
        }
        // A decoder knows where each column lives in this partition's records.
        let decoder = db.row_decoder(&table, partition.partition_id, None)?;
        if i == 0 {
            let names = decoder.column_names();
            write_csv_row(&mut line, names.iter().map(|n| Some(n.as_str())));
            out.write_all(line.as_bytes())?;
        }
        let mut write_error = None;
        db.scan(&table).partition_records(partition, |record, _location| {
            decoder.decode(record, &mut values)?;
            let fields: Vec<Option<String>> = values.iter().map(|v| (!v.is_null()).then(|| v.to_string())).collect();
            line.clear();
            write_csv_row(&mut line, fields.iter().map(|f| f.as_deref()));
            left -= 1;
            if let Err(e) = out.write_all(line.as_bytes()) {
                write_error = Some(e);
                return Ok(Flow::Stop);
            }
            Ok(if left == 0 { Flow::Stop } else { Flow::Continue })
        })?;
        match write_error {
            // The reader went away (`| head`): nothing more is wanted.
            Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Some(e) => return Err(e.into()),
            None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdfkit_forge::Val;

    #[test]
    fn prints_the_forged_customers_in_key_order() {
        let dir = std::env::temp_dir().join(format!("mdfkit-example-cat-test-{}", std::process::id()));
        let spec = mdfkit_forge::samples::shop();
        let paths = mdfkit_forge::forge_to_dir(&spec, &dir).unwrap();
        let mut out = Vec::new();
        cat(&paths, "dbo.Customers", Some(10), &mut out).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("CustomerID,Name,Email,Country,Joined,IsActive,CreditLimit,Token"));
        let mut count = 0;
        for (line, forged) in lines.zip(mdfkit_forge::live_rows(&spec, 0)) {
            let (Some(Val::Int(id)), Some(Val::Text(name))) = (&forged[0], &forged[1]) else { panic!("{forged:?}") };
            assert!(line.starts_with(&format!("{id},{name},")), "{line} against {id}, {name}");
            count += 1;
        }
        assert_eq!(count, 10);
    }
}
