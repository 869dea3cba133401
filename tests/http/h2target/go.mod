module ferry.local/tests/http/h2target

go 1.22
