"""The dashboard: the one page that reads every domain, so it sits at the top of the layers."""
