// The translation unit that builds the doc programs' precompiled umbrella header (doc_pch).
