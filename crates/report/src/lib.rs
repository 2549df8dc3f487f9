//! Report renderers.
