module switchback/traced

go 1.19
