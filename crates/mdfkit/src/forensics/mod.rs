//! Beside the facade, for forensic users: the physical consistency check ([`check`]),
//! schema-less recovery ([`recovery`]), what each byte of a page is ([`anatomy`]), a table's
//! row changes read from the log ([`log_changes`]) and where a value's stored bytes occur in a
//! file ([`search`]), and two states of one database compared table by table and row by row
//! ([`compare`]).

pub mod anatomy;
pub mod check;
pub mod compare;
pub mod log_changes;
pub mod recovery;
pub mod search;
