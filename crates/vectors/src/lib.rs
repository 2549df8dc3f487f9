//! veredicto's embedded vectors written where a vector store can load them, and the check
//! that a store's vectors were made by the model the exam embeds queries with.

#![warn(missing_docs)]
