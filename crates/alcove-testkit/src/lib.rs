//! A scripted fake model server (being written).
