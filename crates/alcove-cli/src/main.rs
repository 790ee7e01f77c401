//! The alcove binary (being written).
fn main() {}
