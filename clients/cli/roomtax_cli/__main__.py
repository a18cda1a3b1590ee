from roomtax_cli.main import app

app()
