// probe drives dpsql serve through Node's pg client (TestNodePg): the
// simple and extended protocols, a parameter, field names and types, a
// refused query's SQLSTATE.
const { Client } = require('pg');

async function main() {
  const [host, port] = process.argv[2].split(':');
  const c = new Client({ host, port: Number(port), user: 'alice', password: 'secret', database: 'dpsql', ssl: false });
  await c.connect();
  await c.query('SET epsilon = 0.1');
  const r = await c.query('SELECT COUNT(*), AVG(x) AS mean FROM t WHERE x < $1', [50]);
  console.log('fields', r.fields.map((f) => f.name + ':' + f.dataTypeID).join(','));
  console.log('count', Number(r.rows[0].count) > 0);
  const l = await c.query({ text: 'SELECT label FROM lookup WHERE code = $1', values: ['b'], rowMode: 'array' });
  console.log('label', l.rows[0][0]);
  try {
    await c.query('SELECT * FROM t');
  } catch (e) {
    console.log('refused', e.code);
  }
  await c.end();
}

main().catch((e) => { console.error(e); process.exit(1); });
