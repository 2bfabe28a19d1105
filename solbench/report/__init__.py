"""What reads results and never measures: tables, HTML, plots, the gap report, the `check` gate."""
