-- The demo's showcase of the rating functions (grown by the ratings work).
\echo 'Elo: 1500 against 1200'
SELECT 1 AS placeholder;
