"""Reports that rerun a published protocol: ``memaudit report paper`` (:mod:`memaudit.reports.paper`)."""
