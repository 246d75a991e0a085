"""The shipped packages, scenarios and manifests (packages_data/), installed as the import package memaudit_data."""
