module ferry.local/bench/http-target

go 1.22
