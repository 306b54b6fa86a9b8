"""The SQLite index: two planes, migrations, projection, rebuild/update, retrieval."""
