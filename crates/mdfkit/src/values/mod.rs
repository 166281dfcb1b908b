//! Values with a storage form of their own: the declared types and their Arrow types
//! ([`types`]), and the decoders of CLR types ([`clrtypes`]: hierarchyid), spatial values
//! ([`spatial`]: geometry, geography) and binary XML ([`xmlbin`]).

pub mod clrtypes;
pub mod collation;
pub mod spatial;
pub mod types;
pub mod value;
pub mod xmlbin;
