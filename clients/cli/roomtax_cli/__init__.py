"""roomtax: the command line for filers and the agency."""
