"""Memory: Markdown files first, a derived SQLite index for search."""
