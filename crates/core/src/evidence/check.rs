//! `golden check` and `golden convert` (filled below).
