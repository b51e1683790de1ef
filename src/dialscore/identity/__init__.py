"""Who a record is: names, addresses, companies and the keys records are found by. Pure: no
database, no clock, no network, and nothing else of dialscore."""
