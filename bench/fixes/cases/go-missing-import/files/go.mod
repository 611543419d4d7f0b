module example.com/label

go 1.19
