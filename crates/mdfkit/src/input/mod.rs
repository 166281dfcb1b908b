//! Bytes in, the bottom layer: random-access bytes ([`io`]), where an input is (a path, or a URL
//! served by an opener registered from outside: [`location`]) and what a file is from its first
//! bytes ([`sniff`]). Pages are read from here up (`crate::source`, `crate::page`).

pub mod io;
pub mod location;
pub mod sniff;
pub mod source;
