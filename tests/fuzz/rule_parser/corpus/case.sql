SELECT CASE payload.k WHEN 1 THEN 'a\n' ELSE upper(`x y`) END, -(-1.5e3) % 2, payload.arr[1][2].z FROM "t" -- c
