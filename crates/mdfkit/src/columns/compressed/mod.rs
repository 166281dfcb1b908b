//! Compressed rowstore data (ROW and PAGE compression, vardecimal): the record format and each
//! type's compressed storage form.
//!
//! - [`crate::record::cd`]: the CD (column descriptor) record format of ROW and PAGE compressed
//!   tables, beside the FixedVar format it replaces.
//! - [`values`]: each type's compressed storage form, expanded to the type's ordinary storage form
//!   so that [`crate::decode`] spells it.
//! - [`vardecimal`]: decimal / numeric in compressed records and in the vardecimal storage format.
//! - [`scsu`]: Unicode compression (SCSU, Unicode Technical Standard #6) of nchar / nvarchar.
//!
//! vardecimal columns of FixedVar records (SQL Server 2005 SP2's vardecimal storage format) and
//! the columns of CD records are read through `rows.rs`. PAGE compressed pages holding a
//! compression information structure (anchor record, dictionary) are refused by name (`scan.rs`).

pub mod scsu;
pub mod values;
pub mod vardecimal;
