//! Compressed rowstore data (ROW and PAGE compression, vardecimal): the record format and each
//! type's compressed storage form.
//!
//! - [`cd_record`]: the CD (column descriptor) record format of ROW and PAGE compressed tables.
//! - [`values`]: each type's compressed storage form, expanded to the type's ordinary storage form
//!   so that [`crate::decode`] spells it.
//! - [`vardecimal`]: decimal / numeric in compressed records and in the vardecimal storage format.
//! - [`scsu`]: Unicode compression (SCSU, Unicode Technical Standard #6) of nchar / nvarchar.
//!
//! vardecimal columns of FixedVar records (SQL Server 2005 SP2's vardecimal storage format) are
//! read through `rows.rs`. The CD record format is not wired into table scans yet: ROW and PAGE
//! compressed partitions are still refused by name (`database.rs`).

pub mod cd_record;
pub mod scsu;
pub mod values;
pub mod vardecimal;
