//! Values: [`value::Value`] and SQL Server's spellings of it ([`value`]), collations and the code
//! pages of char / varchar text ([`collation`]), the declared types and their Arrow types
//! ([`types`]), and the decoders of types with a storage form of their own: CLR types
//! ([`clrtypes`]: hierarchyid), spatial values ([`spatial`]: geometry, geography) and binary XML
//! ([`xmlbin`]); row filters on values' spellings ([`filter`]).

pub mod clrtypes;
pub mod collation;
pub mod filter;
pub mod spatial;
pub mod types;
pub mod value;
pub mod xmlbin;
