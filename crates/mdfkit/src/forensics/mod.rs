//! Beside the facade, for forensic users: the physical consistency check ([`check`]),
//! schema-less recovery ([`recovery`]), what each byte of a page is ([`anatomy`]) and a table's
//! row changes read from the log ([`log_changes`]).

pub mod anatomy;
pub mod check;
pub mod log_changes;
pub mod recovery;
