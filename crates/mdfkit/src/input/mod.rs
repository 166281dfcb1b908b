//! Bytes in: random-access bytes ([`io`]), where an input is (a path, or a URL served by an
//! opener registered from outside: [`location`]), what a file is from its first bytes
//! ([`sniff`]), and pages by address from data files, validated on the way ([`source`]).

pub mod io;
pub mod location;
pub mod sniff;
pub mod source;
