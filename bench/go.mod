module github.com/sluicehq/sluice/bench

go 1.26.8

replace github.com/sluicehq/sluice => ../
