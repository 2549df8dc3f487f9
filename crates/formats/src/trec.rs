//! TREC qrels and run files (see docs/formats.md).
