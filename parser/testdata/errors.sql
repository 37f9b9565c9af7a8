SELECT COUNT(*) FROM adult WHERE /* ERROR "expected an expression, found end of input" */
SELECT * FROM a JOIN b WHERE /* ERROR "expected ON or USING after the joined table, found \"WHERE\"" */ x
SELECT TOP 3 /* ERROR "TOP cannot be used in a compound query" */ a FROM t UNION SELECT b FROM t
SELECT a FROM t UNION WITH /* ERROR "WITH goes before the first arm" */ x AS (SELECT 1) SELECT 2
PRAGMA /* ERROR "unsupported statement PRAGMA" */ table_info(t)
ATTACH /* ERROR "unsupported statement ATTACH" */ 'x.db' AS x
DELETE /* ERROR "unsupported statement DELETE" */ FROM t
INSERT /* ERROR "unsupported statement INSERT" */ INTO t VALUES (1)
CREATE TABLE /* ERROR "expected PRIVACY POLICY" */ t (a)
SELECT a FROM t WHERE EXISTS /* ERROR "subqueries are not supported" */ (SELECT b FROM u)
SELECT COUNT(*) FROM (SELECT a FROM t) WHERE /* ERROR "expected an alias for the subquery" */ a
SELECT LOAD_EXTENSION /* ERROR "unknown function LOAD_EXTENSION" */ ('x')
SELECT SUM /* ERROR "SUM\(\*\) is not valid" */ (*) FROM t
SELECT 'abc /* ERROR "unterminated string" */
SELECT "" /* ERROR "empty quoted identifier" */ FROM t
SELECT 12abc /* ERROR "malformed number" */ FROM t
SELECT a FROM t WHERE a = 1 garbage /* ERROR "expected ';' or end of input" */ x
SELECT ABS /* ERROR "wrong arguments to ABS" */ (1, 2) FROM t
SELECT CAST(a AS BLOB /* ERROR "unknown type BLOB" */) FROM t
SELECT a FROM t AS x FULL /* ERROR "only \[INNER\] JOIN and LEFT/RIGHT \[OUTER\] JOIN" */ JOIN u ON a = b
SELECT a FROM t LEFT OUTER u /* ERROR "expected JOIN after LEFT" */ ON a = b
SELECT COUNT(*) OVER (ROWS /* ERROR "window frames are not supported" */ BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t
SELECT ROW_NUMBER /* ERROR "needs OVER" */ () FROM t
SELECT UPPER(a) OVER /* ERROR "not a window or aggregate function" */ () FROM t
SELECT LAG /* ERROR "wrong arguments to LAG" */ () OVER (ORDER BY a) FROM t
SELECT a @ /* ERROR "unexpected character '@'" */ b FROM t
SHOW 'users' /* ERROR "expected BUDGET, TABLES, POLICY, COLUMNS, LEDGER, CACHE, ANALYSTS, WATCHES, ALL or a setting's name" */
SELECT a FROM t, /* ERROR "only \[INNER\] JOIN" */ u
SELECT a FROM (t /* ERROR "expected a subquery" */)
WITH v AS (SELECT a FROM t) DELETE /* ERROR "expected SELECT" */ FROM v
CREATE ANALYST alice BUDGET /* ERROR "expected PASSWORD 'password' after CREATE ANALYST alice, found \"BUDGET\"" */ epsilon = 1
ALTER ANALYST alice /* ERROR "expected PASSWORD or BUDGET after ALTER ANALYST alice, found end of input" */
SHOW 42 /* ERROR "expected BUDGET, TABLES, POLICY, COLUMNS, LEDGER, CACHE, ANALYSTS, WATCHES, ALL or a setting's name after SHOW" */
SELECT COUNT(*) FROM a JOIN b /* ERROR "expected ON or USING after the joined table, found end of input" */
SELECT COUNT(*) FROM a JOIN b USING () /* ERROR "expected a column name in USING, found \"\)\"" */
SELECT COUNT(*) FROM pums.pums. /* ERROR "expected" */ x
CREATE WATCH w ( /* ERROR "expected OPTIONS" */ threshold = 1)
