"""The release package, pure: a `Snapshot` (snapshot.py) in, a folder of files out. No database here:
the app's services build the snapshot from the database; each writer turns it into one format."""
