"""The notifications service: signed webhooks, e-mail notices and due-date reminders."""
