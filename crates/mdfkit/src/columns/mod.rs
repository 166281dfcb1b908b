//! Columns: a record's stored bytes → the values of its declared columns. Which stored column
//! feeds which declared column ([`rows`]), which column an index's records hold ([`index_rows`]), off-row values ([`lob`]), compressed storage forms
//! ([`compressed`]), each type's text spelling ([`decode`]) and Arrow batches ([`columnar`]).

pub mod columnar;
pub mod compressed;
pub mod decode;
pub mod index_rows;
pub mod lob;
pub mod rows;
