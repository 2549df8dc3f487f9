//! Diagnosis notes: JSONL, one `{"id": CASE_ID, "note": "..."}` per line. A failing case
//! with a note is "documented". A case may have one note; a repeat is an error.

use crate::error::Result;
use crate::jsonl::{self, SeenIds};
use std::collections::BTreeMap;
use std::path::Path;

/// Reads notes keyed by case ID.
pub fn read_notes(path: &Path) -> Result<BTreeMap<String, String>> {
    let mut seen = SeenIds::default();
    let mut notes = BTreeMap::new();
    for line in jsonl::read_objects(path)? {
        let id = line.req_id("id")?;
        seen.check(&line, "id", &id, "note")?;
        let note = line
            .opt_text("note")?
            .ok_or_else(|| line.error("note", "missing or empty"))?;
        notes.insert(id, note);
    }
    Ok(notes)
}
